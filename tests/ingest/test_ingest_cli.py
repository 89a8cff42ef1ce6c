"""The `python -m ingest` command: summary line, exit codes, bad input, no half-written state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import MMLU_SUITE, SAFETY, q, run_module, requires_fixtures

pytestmark = requires_fixtures  # reads the shared real logs


def run_cli(*args, env=None):
    return run_module("ingest", *args, env=env)


def copy_suite(tmp_path: Path, n_runs: int = 3) -> Path:
    suite = tmp_path / "runs" / "v1"
    suite.mkdir(parents=True)
    for run in sorted(p for p in MMLU_SUITE.iterdir() if p.is_dir())[:n_runs]:
        shutil.copytree(run, suite / run.name)
    shutil.copy(MMLU_SUITE / "schema.json", suite / "schema.json")
    for f in suite.rglob("*"):
        f.chmod(0o755 if f.is_dir() else 0o644)
    return suite


def test_cli_ingests_suite_and_prints_summary(tmp_db):
    r = run_cli(MMLU_SUITE, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("ingested 50 runs, 1,000 predictions, 532 failures in ")
    assert str(tmp_db) in last
    assert q(tmp_db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(1000, 532)]


def test_db_from_environment(tmp_path):
    import os

    db = tmp_path / "env.duckdb"
    r = run_cli(SAFETY / "xstest:model=openai_gpt-4o-2024-05-13", env={**os.environ, "FAULTLINE_DB": str(db)})
    assert r.returncode == 0, r.stderr
    assert q(db, "SELECT count(*) FROM outcomes") == [(100,)]


@pytest.mark.parametrize(
    "damage, message",
    [
        ("truncate", r"display_predictions.json:\d+:\d+: truncated JSON"),
        ("garbage", "display_predictions.json:1:1: invalid JSON"),
        ("wrong_type", "display_predictions.json: expected list, found dict"),
        ("bad_trial", "display_predictions.json: prediction 0: train_trial_index"),
    ],
)
def test_bad_helm_input_exits_nonzero_and_writes_nothing(tmp_path, tmp_db, damage, message):
    assert run_cli(SAFETY / "xstest:model=openai_gpt-4o-2024-05-13", "--db", tmp_db).returncode == 0
    before = q(tmp_db, "SELECT count(*), sum(is_correct::INT) FROM outcomes")
    suite = copy_suite(tmp_path)
    victim = sorted(suite.iterdir())[1] / "display_predictions.json"
    raw = victim.read_text()
    if damage == "truncate":
        victim.write_text(raw[: len(raw) // 2])
    elif damage == "garbage":
        victim.write_text("<html>not json</html>")
    elif damage == "wrong_type":
        victim.write_text(json.dumps({"predictions": []}))
    elif damage == "bad_trial":
        rows = json.loads(raw)
        rows[0]["train_trial_index"] = "first"
        victim.write_text(json.dumps(rows))
    r = run_cli(suite, "--db", tmp_db)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    import re

    assert re.search(message, r.stderr), r.stderr
    assert str(victim.parent) in r.stderr
    # the other (valid) runs of the same input were not written either
    assert q(tmp_db, "SELECT count(*), sum(is_correct::INT) FROM outcomes") == before
    assert q(tmp_db, "SELECT count(*) FROM runs") == [(1,)]


def test_missing_path_and_unknown_format(tmp_path, tmp_db):
    r = run_cli(tmp_path / "nope", "--db", tmp_db)
    assert r.returncode == 2 and "nope: no such file or folder" in r.stderr
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    r = run_cli(other, "--db", tmp_db)
    assert r.returncode == 2 and "notes.txt: not a log format Faultline recognises" in r.stderr
    assert "Traceback" not in r.stderr


def test_corrupt_database_file(tmp_path):
    db = tmp_path / "broken.duckdb"
    db.write_text("this is not a database")
    r = run_cli(SAFETY, "--db", db)
    assert r.returncode == 2
    assert "broken.duckdb" in r.stderr and "Traceback" not in r.stderr
