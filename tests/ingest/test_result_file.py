"""Issue 35, round trips: `python -m ingest` with FAULTLINE_RESULT_FILE set writes its outcome —
exit code, error, the settings the error asks for — as JSON, and the app reads the asks from
there, never back out of the message, where a dataset's name or a model's answer can look like
a flag."""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import run_module
from inspect_gen import inspect_log

MIMIC = "--scale 'x=LOW:HIGH'"  # what a flag asked for looks like in a message


def _ratings(path: Path, datasets: list[str]) -> Path:
    """Averaged 1–3 ratings: no scale known, so each dataset's load is refused until one is given."""
    rows = [{"model": "m", "dataset": d, "instance_id": str(i), "output": "x", "score": s}
            for d in datasets for i, s in enumerate([1.0, 4 / 3, 3.0])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _ingest(tmp_path: Path, *args) -> tuple[int, dict]:
    """Run the CLI with a result file; its exit code, and what it wrote there."""
    result = tmp_path / "out" / "job.result.json"
    result.parent.mkdir(exist_ok=True)
    done = run_module("ingest", *args, "--db", tmp_path / "s.duckdb",
                      env={**os.environ, "FAULTLINE_RESULT_FILE": str(result)})
    assert sorted(p.name for p in result.parent.iterdir()) == ["job.result.json"]  # no temporary file left
    return done.returncode, json.loads(result.read_text())


def _asks(*triples: tuple[str, str, str]) -> list[dict]:
    return [{"flag": f, "key": d, "placeholder": p} for f, d, p in triples]


def test_a_load_refused_for_want_of_a_scale_writes_exactly_the_flags_it_asks_for(tmp_path):
    code, result = _ingest(tmp_path, _ratings(tmp_path / "r.jsonl", ["rated", "my data"]))
    assert code == result["exit_code"] == 2
    assert result["error"].startswith("no verdicts without a scale, and Faultline does not guess one:\n  rated: score (")
    assert result["asks"] == _asks(("--scale", "rated", "LOW:HIGH"), ("--pass-threshold", "rated", "X"),
                                   ("--scale", "my data", "LOW:HIGH"), ("--pass-threshold", "my data", "X"))


def test_a_load_that_succeeds_writes_no_error_and_no_asks(tmp_path):
    ratings = _ratings(tmp_path / "r.jsonl", ["rated"])
    assert _ingest(tmp_path, ratings, "--scale", "rated=1:3") == (0, {"exit_code": 0, "error": None, "asks": []})


def test_a_dataset_named_like_a_flag_asks_only_for_its_own_settings(tmp_path):
    code, result = _ingest(tmp_path, _ratings(tmp_path / "r.jsonl", [MIMIC]))
    assert code == 2 and f"  {MIMIC}: score (" in result["error"]
    assert result["asks"] == _asks(("--scale", MIMIC, "LOW:HIGH"), ("--pass-threshold", MIMIC, "X"))


def test_a_scorers_value_that_mentions_a_flag_asks_nothing_of_it(tmp_path):
    # the scorer's values are text, one of them a flag; another scorer has numbers
    numbers = {0: {"match": {"value": "C"}}, 1: {"match": {"value": "I"}}}
    log = inspect_log(tmp_path / "grid.eval", "grid", [MIMIC, "G:0.0 : T:50.0"], extra_scores=numbers)
    code, result = _ingest(tmp_path, log)
    assert code == 2
    assert f"e.g. {json.dumps(MIMIC)}" in result["error"] and "--scale grid=LOW:HIGH" in result["error"]
    # the one flag asked of this load: the other scorer (the scale is for a table of the user's own)
    assert result["asks"] == _asks(("--main-metric", "grid", "NAME"))


def test_an_error_that_asks_for_nothing_writes_no_asks_whatever_it_quotes(tmp_path):
    bad = tmp_path / f"{MIMIC}.jsonl"
    bad.write_text('{"model": "m", "instance_id": 1, "output": "x", "correct": "maybe"}\n')  # no verdict
    code, result = _ingest(tmp_path, bad)
    assert code == result["exit_code"] == 2 and MIMIC in result["error"]
    assert result["asks"] == []
