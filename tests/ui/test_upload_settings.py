"""Issue 23, item 9: uploads finish. A load that needs a scale, a threshold or a main metric shows
the whole message (not cut after its colon) and the fields to give them, then loads with them.
AppTest here; the real browser in tests/ui/test_upload_browser.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamlit.testing.v1 import AppTest

from conftest import q
from inspect_gen import inspect_log
from load_panel import RATINGS, finished_jobs, load
from ui.text import md_lines


def number_input(at: AppTest, label: str):
    return next(n for n in at.number_input if n.label == label)


def test_a_load_that_needs_a_scale_shows_the_whole_message_and_the_fields_then_loads(data_root):
    ratings = data_root / "ratings.jsonl"
    ratings.write_text("".join(json.dumps(r) + "\n" for r in RATINGS))
    at = load("ratings.jsonl")
    finished_jobs(expect_failure=True)
    at.run()
    assert not at.exception
    # the red box holds the message whole: its first line and the dataset's line with the flags
    (error,) = [e.value for e in at.error]
    assert error == md_lines(
        "load ratings.jsonl — failed (exit 2): no verdicts without a scale, and Faultline does not guess one:\n"
        f"  rated: score ({ratings}): nothing says what scale it is on (its scores run 1–3; neither the log nor "
        "the registry declares one). Give its scale with --scale rated=LOW:HIGH (the lowest and highest score "
        "possible), or the line itself with --pass-threshold rated=X")
    assert [n.label for n in at.number_input] == [
        "rated: lowest score possible", "rated: highest score possible", "rated: or pass at this score"]
    # half a scale is refused on the page, nothing started
    number_input(at, "rated: lowest score possible").set_value(1.0)
    next(b for b in at.button if b.label == "Load again with these settings").click()
    at.run()
    assert "rated: give both the lowest and the highest score, or neither" in [e.value.replace("\\", "") for e in at.error]
    number_input(at, "rated: highest score possible").set_value(3.0)
    next(b for b in at.button if b.label == "Load again with these settings").click()
    at.run()
    finished_jobs(expect_failure=False)
    db = Path(os.environ["FAULTLINE_DB"])
    assert q(db, "SELECT DISTINCT metric_min, metric_max, pass_threshold, scale_source FROM runs") == [
        (1.0, 3.0, 2.4, "config")]
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE is_correct) FROM outcomes") == [(8, 3)]
    at.run()
    assert not at.exception and not at.error
    assert any("load ratings.jsonl with rated=1:3 — done" in s.value.replace("\\", "") for s in at.success)


def test_a_load_that_needs_a_main_metric_gets_a_field_for_it(data_root):
    numbers = {0: {"match": {"value": "C"}}, 1: {"match": {"value": "I"}}}
    inspect_log(data_root / "grid.eval", "grid", ["G:50.0 : T:100.0", "G:0.0 : T:50.0"], extra_scores=numbers)
    at = load("grid.eval")
    finished_jobs(expect_failure=True)
    at.run()
    (error,) = [e.value.replace("\\", "") for e in at.error]  # as it reads on screen
    assert error.startswith("load grid.eval — failed (exit 2): no verdicts from scores that are not numbers")
    assert 'e.g. "G:50.0 : T:100.0". Judge on another scorer with --main-metric grid=NAME' in error
    field = next(t for t in at.text_input if t.label == "grid: the metric that decides pass/fail")
    field.input("match")
    next(b for b in at.button if b.label == "Load again with these settings").click()
    at.run()
    finished_jobs(expect_failure=False)
    db = Path(os.environ["FAULTLINE_DB"])
    assert q(db, "SELECT main_metric, count(*), count(*) FILTER (WHERE is_correct) FROM runs JOIN outcomes "
                 "USING (run_id) GROUP BY 1") == [("match", 2, 1)]


def test_a_refusal_asks_for_the_flags_its_message_names_whatever_the_dataset_is_called():
    from core.errors import Ask
    from core.verdicts import refusal

    names = ["rated", "my data", "it's", 'say "hi"', "a=b", "--scale 'x=LOW:HIGH'"]
    error = refusal([(n, "score", "x.jsonl", "why") for n in names])
    assert error.asks == [Ask(f, n, p) for n in names for f, p in (("--scale", "LOW:HIGH"), ("--pass-threshold", "X"))]
    # the message names each one as the user types it
    assert all(ask.typed in error.message for ask in error.asks)


def test_a_job_reads_its_asks_from_its_result_file_and_none_from_a_job_killed_before_it_wrote_one(tmp_path):
    import subprocess
    import sys

    from core.errors import Ask
    from core.result import CommandResult
    from ui.jobs import Job, _result_file

    log = tmp_path / "job.log"
    log.write_text("ingest  30%|███\rreading rated.jsonl\n")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    job = Job("load", ["ingest"], log, proc)
    written = {"exit_code": -9, "error": "why", "asks": [{"flag": "--scale", "key": "rated", "placeholder": "LOW:HIGH"}]}
    _result_file(log).write_text(json.dumps(written))
    assert job.result() is None  # running: what it will say is not said yet
    proc.kill()
    proc.wait()
    assert job.result() == CommandResult(-9, "why", (Ask("--scale", "rated", "LOW:HIGH"),))
    assert job.asks() == (Ask("--scale", "rated", "LOW:HIGH"),)
    # killed before it wrote one (or a file that is not one): no asks, and its log's last line says why
    for text in (None, "{", json.dumps({**written, "asks": [{"flag": "--scale"}]})):
        _result_file(log).unlink(missing_ok=True)
        if text is not None:
            _result_file(log).write_text(text)
        assert job.result() is None and job.asks() == ()
    assert job.problem() == "reading rated.jsonl"


def test_a_failed_job_says_its_whole_error(tmp_path):
    from ui.jobs import Job

    log = tmp_path / "job.log"
    log.write_text("ingest  30%|███\rprogress\nerror: no verdicts without a scale:\n  rated: why. Give --scale rated=LOW:HIGH\n"
                   "  other: why\nafter\n")
    job = Job("load", [], log, proc=None)
    assert job.problem() == "no verdicts without a scale:\n  rated: why. Give --scale rated=LOW:HIGH\n  other: why"
