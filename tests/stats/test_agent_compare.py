"""Models compared on agent tasks (#25 item 5): where the first error falls and which tools fail,
paired on the tasks both ran — in stats, `stats compare --json` and on /compare and /signatures."""

from __future__ import annotations

import json

import pytest
from scipy.stats import wilcoxon
from streamlit.testing.v1 import AppTest

import store
from agent_pair import SHAPE, seed_pair
from conftest import ROOT, run_module
from seed_store import seed
from stats import agent_compare, agent_sides
from taxonomy import analyze

A, B = "org/agent-a", "org/agent-b"


@pytest.fixture(scope="module")
def pair_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("agents") / "pair.duckdb"
    seed_pair(db, A, B)
    analyze(db, "offline")
    return db


def test_the_first_error_and_the_tools_on_the_tasks_both_ran(pair_db):
    with store.read_connection(pair_db) as con:
        c = agent_compare(con, A, B, "offline")
    # nine tasks both ran; each model's task the other did not run is left out
    assert c.shared_tasks == len(SHAPE) == 9
    a, b = c.a_side, c.b_side
    assert (a.tasks, a.failed, a.analysed, a.with_step, a.early, a.middle, a.late) == (9, 8, 8, 8, 8, 0, 0)
    assert (b.tasks, b.failed, b.analysed, b.with_step, b.early, b.middle, b.late) == (9, 8, 8, 8, 0, 0, 8)
    # task t<n>: 12 + 2n steps; A's first error at step 3, B's at step 11 + 2n
    a_shares = [3 / (12 + 2 * n) for n in range(8)]
    b_shares = [(11 + 2 * n) / (12 + 2 * n) for n in range(8)]
    assert a.step_median == 3 and b.step_median == 18  # steps 11..25, median of 17 and 19
    assert a.share_median == pytest.approx(sorted(a_shares)[3] / 2 + sorted(a_shares)[4] / 2)
    diffs = [y - x for x, y in zip(a_shares, b_shares)]
    assert c.both_with_step == 8 and c.wilcoxon_n == 8
    assert c.wilcoxon_p == wilcoxon(diffs, zero_method="wilcox").pvalue == 0.0078125
    # tools: A's bash errors on every call it fails with, B's python on one call of each failed run
    assert a.tools.row(0, named=True) == {"tool": "bash", "calls": 8, "malformed_calls": 0, "results": 8, "errors": 8,
                                          "tasks": 8, "error_share": 1.0}
    assert b.tools.filter(b.tools["tool"] == "python").row(0, named=True)["errors"] == 8
    assert (a.tool_errors, b.tool_errors) == (8, 8)


def test_signatures_count_every_task_of_each_model(pair_db):
    with store.read_connection(pair_db) as con:
        sides = agent_sides(con, "offline")
    assert [(s.model, s.tasks, s.failed, s.with_step, s.early, s.late) for s in sides] == [
        (A, 10, 9, 9, 8, 1), (B, 10, 9, 9, 0, 9)]  # each one's own task: 4 steps, its error at step 3 (late)


def test_stats_compare_json_carries_the_agent_comparison(pair_db):
    out = run_module("stats", "compare", A, B, "--db", pair_db, "--json")
    assert out.returncode == 0, out.stderr
    agents = json.loads(out.stdout)["agents"]
    with store.read_connection(pair_db) as con:
        assert agents == json.loads(json.dumps(agent_compare(con, A, B, "offline").to_json()))
    assert agents["first_error_share"]["wilcoxon_p"] == 0.0078125
    text = run_module("stats", "compare", A, B, "--db", pair_db).stdout
    assert "Agent runs: 9 tasks both ran (with a transcript)" in text
    assert "Wilcoxon signed-rank p = 0.0078 on 8 non-zero differences" in text


def test_pages_show_the_agent_runs_only_where_there_are_transcripts(pair_db, tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_DB", str(pair_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.run()
    assert not at.exception
    assert "Agent runs" in [h.value for h in at.subheader]
    table = next(d.value for d in at.dataframe if "measure" in d.value.columns)
    assert dict(zip(table["measure"], zip(table["m0"], table["m1"]))) == {
        "Tasks": ("9", "9"), "Failed": ("8", "8"), "Steps (median)": ("18", "18"), "Analysed": ("8", "8"),
        "Step named": ("8", "8"), "Early": ("8", "0"), "Middle": ("0", "0"), "Late": ("0", "8"),
        "Error step (median)": ("3", "18"), "Run before it (median)": ("15.8%", "94.7%"),
        "Tool errors": ("8 of 69", "8 of 69")}
    assert any("Wilcoxon signed\\-rank p \\= 0\\.0078" in m.value for m in at.markdown)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/signatures.py")
    at.run()
    assert not at.exception
    assert "Agent runs: where the first error falls, which tools fail" in [h.value for h in at.subheader]
    # a store of plain answers: no agent section
    plain = tmp_path / "plain.duckdb"
    seed(plain, [dict(model=m, dataset="d", instance_id=f"q{i}", is_correct=i % 2 == 0, title="t", category="Refusal")
                 for m in ("a", "b") for i in range(4)])
    monkeypatch.setenv("FAULTLINE_DB", str(plain))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.run()
    assert not at.exception and "Agent runs" not in [h.value for h in at.subheader]


def test_agent_tables_count_the_prediction_the_pages_count(tmp_path):
    """Reruns: the agent tables take each question's transcript from the run whose verdict
    latest_outcomes counts (the rerun the logs date latest, whatever order they were ingested in),
    and a model's variants stay apart (a bare `model` in a window is the runs column, without
    its variant)."""
    from datetime import datetime

    from agent_pair import ignored_error, passing
    from store.transcripts import agent_tasks, question_across_models
    from transcripts_gen import seed_transcripts

    db = tmp_path / "reruns.duckdb"
    # the later-dated run is ingested first: ingest order alone would pick the other one
    seed_transcripts(db, [{"instance_id": "t1", "is_correct": False, "output": "x",
                           "steps": ignored_error("bash", 1, 0, 1)}],
                     model="org/agent", run_id="agents:late", started_at=datetime(2026, 2, 1))
    seed_transcripts(db, [{"instance_id": "t1", "is_correct": True, "output": "x", "steps": passing(1)}],
                     model="org/agent", run_id="agents:early", started_at=datetime(2026, 1, 1))
    for shots, run_id in ((0, "agents:zero"), (5, "agents:five")):
        seed_transcripts(db, [{"instance_id": "t1", "is_correct": shots == 5, "output": "x", "steps": passing(2)}],
                         model="org/other", run_id=run_id, settings={"n_shot": shots})
    with store.read_connection(db) as con:
        counted = con.execute("SELECT model, run_id, is_correct FROM latest_outcomes ORDER BY model").fetchall()
        tasks = agent_tasks(con)
        across = question_across_models(con, "agent-bench", "t1")
    assert counted == [("org/agent", "agents:late", False), ("org/other · 0-shot", "agents:zero", False),
                       ("org/other · 5-shot", "agents:five", True)]
    assert tasks.select("model", "run_id", "is_correct", "n_steps").rows() == [
        ("org/agent", "agents:late", False, 6), ("org/other · 0-shot", "agents:zero", False, 4),
        ("org/other · 5-shot", "agents:five", True, 4)]
    assert across.select("model", "run_id").rows() == [
        ("org/agent", "agents:late"), ("org/other · 0-shot", "agents:zero"), ("org/other · 5-shot", "agents:five")]
