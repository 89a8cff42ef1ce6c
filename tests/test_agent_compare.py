"""Two models compared on agent tasks (issue 25 item 5): paired on the tasks both ran with a
transcript, where the first decisive error falls (steps, share of the run, early / middle / late)
with a Mann–Whitney U test, which tools fail per model with Fisher's test; exact values against
scipy, and /compare shows the numbers `python -m stats compare --json` gives."""

from __future__ import annotations

import json

import pytest
from scipy.stats import fisher_exact, mannwhitneyu
from streamlit.testing.v1 import AppTest

import store
from stats import compare
from stats.agents import compare_agents
from taxonomy import analyze
from tests.conftest import ROOT, run_module
from transcripts_gen import seed_transcripts

N = 12  # steps in every transcript


def run(invented_at: int | None, tool_error: bool) -> list[dict]:
    """A transcript of N steps: the task, work, made-up data at `invented_at` (the offline
    detector's first decisive error), then a bash call whose result errs or not, and a working
    retry (so the error is addressed and names no earlier step)."""
    steps = [{"kind": "message", "role": "user", "text": "Analyse the sales data."}]
    for i in range(1, N - 4):
        text = "I will use a mock dataset instead." if i == invented_at else f"working on part {i}"
        steps.append({"kind": "message", "role": "assistant", "agent": "solver", "text": text})
    steps += [
        {"kind": "tool call", "role": "assistant", "agent": "solver", "tool_name": "bash", "tool_call_id": "c1",
         "arguments": {"cmd": "cat sales.csv"}},
        {"kind": "tool result", "role": "tool", "tool_name": "bash", "tool_call_id": "c1", "text": "x",
         **({"error": "No such file"} if tool_error else {})},
        {"kind": "tool call", "role": "assistant", "agent": "solver", "tool_name": "bash", "tool_call_id": "c2",
         "arguments": {"cmd": "ls"}},
        {"kind": "tool result", "role": "tool", "tool_name": "bash", "tool_call_id": "c2", "text": "data/"},
    ]
    assert len(steps) == N
    return steps


# A errs early (steps 1-3), B late (steps 5-7), on tasks t0..t7; both pass t8, t9; only A ran t10
A_STEPS = [1, 2, 3, 1, 2, 3, 1, 2]
B_STEPS = [5, 6, 7, 5, 6, 7, 5, 6]
A_TOOL_ERRORS = {0, 1, 2, 3, 4, 5}  # tasks where A's first bash call errs
B_TOOL_ERRORS = {0}


@pytest.fixture
def agents_db(tmp_db, monkeypatch):
    a_items = [{"instance_id": f"t{i}", "is_correct": False, "output": "?", "steps": run(A_STEPS[i], i in A_TOOL_ERRORS)}
               for i in range(8)]
    a_items += [{"instance_id": f"t{i}", "is_correct": True, "output": "ok", "steps": run(None, False)} for i in (8, 9)]
    a_items.append({"instance_id": "t10", "is_correct": False, "output": "?", "steps": run(1, True)})
    b_items = [{"instance_id": f"t{i}", "is_correct": False, "output": "?", "steps": run(B_STEPS[i], i in B_TOOL_ERRORS)}
               for i in range(8)]
    b_items += [{"instance_id": f"t{i}", "is_correct": True, "output": "ok", "steps": run(None, False)} for i in (8, 9)]
    seed_transcripts(tmp_db, a_items, model="agent-a", dataset="sales", run_id="agents:a")
    seed_transcripts(tmp_db, b_items, model="agent-b", dataset="sales", run_id="agents:b")
    analyze(tmp_db, "offline")
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return tmp_db


def test_first_errors_and_tools_compared_on_the_tasks_both_ran(agents_db):
    with store.read_connection(agents_db) as con:
        ag = compare_agents(con, "agent-a", "agent-b", "offline")
    assert ag.n_tasks == 10  # t10: only A ran it
    a, b = ag.first_errors
    assert (a.model, a.analysed, a.with_step, a.median_step, a.early, a.middle, a.late) == \
        ("agent-a", 8, 8, 2.0, 8, 0, 0)
    assert (b.model, b.analysed, b.with_step, b.median_step, b.early, b.middle, b.late) == \
        ("agent-b", 8, 8, 6.0, 0, 8, 0)
    assert a.median_share == pytest.approx(2 / N) and b.median_share == pytest.approx(6 / N)
    expected = mannwhitneyu([s / N for s in A_STEPS], [s / N for s in B_STEPS], alternative="two-sided").pvalue
    assert ag.share_p == pytest.approx(expected, rel=1e-12)
    assert [(r.tool, r.a_calls, r.a_results, r.a_errors, r.b_calls, r.b_results, r.b_errors) for r in ag.tools] == \
        [("bash", 20, 20, 6, 20, 20, 1)]
    assert ag.tools[0].p_fisher == pytest.approx(fisher_exact([[6, 14], [1, 19]]).pvalue, rel=1e-12)
    assert ag.tools[0].q_bh == ag.tools[0].p_fisher  # one tool tested


def test_too_few_located_errors_are_not_tested(agents_db):
    with store.read_connection(agents_db) as con:
        ag = compare_agents(con, "agent-a", "agent-b", "offline", datasets=["sales"])
        # a model pair with no shared transcript gives no agent comparison at all
        assert compare_agents(con, "agent-a", "nobody", "offline") is None
    assert ag.share_p is not None
    from stats.agents import share_test
    import polars as pl

    few = pl.DataFrame({"model": ["x"] * 4 + ["y"] * 9, "share": [0.1] * 4 + [0.9] * 9})
    assert share_test(few, "x", "y") is None


def test_compare_page_shows_the_numbers_stats_compare_json_gives(agents_db):
    proc = run_module("stats", "compare", "--db", agents_db, "agent-a", "agent-b", "--analyst", "offline", "--json")
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)["agents"]
    assert cli["n_tasks"] == 10 and [f["median_step"] for f in cli["first_errors"]] == [2.0, 6.0]
    with store.read_connection(agents_db) as con:
        assert compare(con, "agent-a", "agent-b", analyst="offline").to_json()["agents"] == cli

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.query_params.update({"a": "agent-a", "b": "agent-b", "analyst": "offline"})
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    frames = {tuple(d.value.columns): d.value for d in at.dataframe}
    firsts = frames[("model", "analysed", "with_step", "median_step", "median_share", "early", "middle", "late")]
    assert firsts.to_dict("records") == [
        {"model": "agent-a", "analysed": "8", "with_step": "8", "median_step": "2", "median_share": "16.7%",
         "early": "8", "middle": "0", "late": "0"},
        {"model": "agent-b", "analysed": "8", "with_step": "8", "median_step": "6", "median_share": "50.0%",
         "early": "0", "middle": "8", "late": "0"}]
    p = cli["first_error_share_p"]
    from stats import fmt

    captions = [c.value for c in at.caption]
    assert f"Mann–Whitney U (two-sided) on the share of the run before the first error: p = {fmt.p_value(p)}." \
        in captions
    tools = frames[("tool", "a", "b", "p", "q")]
    row = cli["tools"][0]
    assert tools.to_dict("records") == [{
        "tool": "bash", "a": "6 of 20 (30.0%)", "b": "1 of 20 (5.0%)",
        "p": fmt.p_value(row["p_fisher"]), "q": fmt.p_value(row["q_bh"])}]
    assert "On the 10 tasks both models ran with a transcript." in " ".join(captions)
