"""store/first_errors.py: one transcript's analysis with its step, and where the first error falls
per model (the queries the timeline and compare pages build on), with exact values."""

from __future__ import annotations

import pytest

from store import read_connection
from store.first_errors import first_error_positions, first_error_steps, transcript_analysis
from taxonomy import analyze
from transcripts_gen import seed_transcripts


def say(text, agent="solver"):
    return {"kind": "message", "text": text, "agent": agent, "role": "assistant"}


def steps(n, at=None, what=""):
    return [{"kind": "message", "role": "user", "text": "Do the task."},
            *[say(what if i == at else f"working on part {i}") for i in range(1, n)]]


@pytest.fixture
def analysed(tmp_db):
    seed_transcripts(tmp_db, [
        # the first error on step 1 of 9 (early), on step 8 of 9 (late), none certain
        {"instance_id": "early", "is_correct": False, "output": "1", "steps": steps(9, 1, "I will use a mock dataset.")},
        {"instance_id": "late", "is_correct": False, "output": "2",
         "steps": steps(9, 8, "I am unable to complete the task.")},
        {"instance_id": "none", "is_correct": False, "output": "3", "steps": steps(10)},
        {"instance_id": "passed", "is_correct": True, "output": "4", "steps": steps(4)},
    ], model="m1")
    seed_transcripts(tmp_db, [
        {"instance_id": "early", "is_correct": False, "output": "1", "steps": steps(12, 5, "Using hypothetical data.")},
    ], model="m2", run_id="agents:r2")
    analyze(tmp_db, "offline")
    return tmp_db


def test_first_error_positions_per_model(analysed):
    with read_connection(analysed) as con:
        rows = first_error_steps(con, "offline").select("model", "instance_id", "step_index", "n_steps", "share",
                                                         "position", "category").rows()
        summary = first_error_positions(con, "offline").to_dicts()
    assert rows == [("m1", "early", 1, 9, 1 / 9, "early", "Hallucination"),
                    ("m1", "late", 8, 9, 8 / 9, "late", "Premature Termination"),
                    ("m1", "none", None, 10, None, None, "Hard to Analyze"),
                    ("m2", "early", 5, 12, 5 / 12, "middle", "Hallucination")]
    assert summary == [
        {"model": "m1", "transcripts": 3, "with_step": 2, "median_step": 4.5, "mean_step": 4.5, "median_steps": 9.0,
         "mean_share": pytest.approx(0.5), "early": 1, "middle": 0, "late": 1},
        {"model": "m2", "transcripts": 1, "with_step": 1, "median_step": 5.0, "mean_step": 5.0, "median_steps": 12.0,
         "mean_share": pytest.approx(5 / 12), "early": 0, "middle": 1, "late": 0}]
    with read_connection(analysed) as con:
        only_m2 = first_error_positions(con, "offline", models=["m2"])
    assert only_m2["model"].to_list() == ["m2"]


def test_the_analysis_of_a_transcript_comes_with_its_step(analysed):
    with read_connection(analysed) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE model = 'm1'").fetchall()[0][0]
        late = transcript_analysis(con, run_id, "late", 0, "offline")
        none = transcript_analysis(con, run_id, "none")
        passed = transcript_analysis(con, run_id, "passed")
    assert (late["step_index"], late["step_agent"], late["step_quote"], late["label"], late["n_steps"]) == (
        8, "solver", "I am unable to complete the task", "Premature Termination", 9)
    assert late["step"]["text"] == "I am unable to complete the task." and late["step"]["step_index"] == 8
    assert none["step"] is None and none["label"] == "Hard to Analyze" and none["error_title"] == \
        "No rule is certain about this transcript"
    assert passed is None  # a passing prediction is not analysed


def test_instances_shows_a_transcripts_first_error_step_and_checks_its_quote_against_the_step(analysed, monkeypatch):
    from page_kit import run_page

    monkeypatch.setenv("FAULTLINE_DB", str(analysed))
    at = run_page("pages/instances.py", instance="agent-bench:late")
    assert not at.exception
    captions = [c.value for c in at.caption]
    assert "first decisive error at step 8 of 9 · agent solver" in captions
    assert "evidence (verified: it occurs verbatim in step 8)" in captions
    assert not any("UNVERIFIED" in c for c in captions)
    assert any("Gives up on the task" in m.value and "Premature Termination" in m.value for m in at.markdown)
    none = run_page("pages/instances.py", instance="agent-bench:none")
    assert "no step named in this transcript of 10 steps" in [c.value for c in none.caption]
