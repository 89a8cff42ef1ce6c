"""The LLM analyst on agent transcripts (taxonomy/first_error.py, transcripts.py) against the
loopback server: it receives every step numbered; every step index, agent and quote stored
resolves to a stored step; long transcripts are read in overlapping segments that fit, in order,
and say which were read; wrong answers are asked again, then abstained from; the cache, the
journal and --max-cost hold across a chain's requests."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, q, requires_fixtures
from ingest import ingest_paths
from ingest.options import ReadOptions
from llm_server import FakeLLMServer, transcript_steps as shown_steps
from store import read_connection
from store.first_errors import transcript_analysis, transcript_steps
from taxonomy import LLMSettings, analyze
from taxonomy.agreement import agreement
from taxonomy.catalog import AGENT_VERSION
from taxonomy.context import context_budget
from taxonomy.labels import load_labels, read_labels
from taxonomy.steps import agents_of, quote_resolves
from transcripts_gen import seed_transcripts

MODEL = "openai/test-model"
PRICED = "openai/gpt-4o-mini"
WHO_WHEN = FIXTURES / "agents" / "who-when-algorithm-generated"


pytestmark = pytest.mark.usefixtures("llm_env")  # a test key in the environment, for every test


def run(db, srv, model=MODEL, **settings):
    """`analyze` against the fake server; the keywords are LLMSettings fields."""
    settings = {"api_base": srv.api_base, "timeout": 5.0, "backoff_s": 0.01, **settings}
    return analyze(db, model, settings=LLMSettings(**settings))


def every_stored_step_resolves(db, analyst=MODEL) -> int:
    """Check every analysis that names a step: the step exists, the agent is one the transcript
    names, the quote occurs in that step. Returns how many were checked."""
    with read_connection(db) as con:
        rows = con.execute("""SELECT run_id, instance_id, train_trial_index, step_index, step_agent, step_quote, n_steps
                              FROM analyses WHERE analyst = ? AND step_index IS NOT NULL""", [analyst]).fetchall()
        for run_id, iid, trial, step, agent, quote, n in rows:
            steps = transcript_steps(con, run_id, iid, trial)
            assert len(steps) == n and 0 <= step < n
            assert agent is None or agent in agents_of(steps)
            assert quote_resolves(steps[step], quote), (iid, step, quote)
    return len(rows)


def step_ids(body) -> list[int]:
    return [s["n"] for s in shown_steps(body)]


# ---------------------------------------------------------------- Who&When, through the loopback


@requires_fixtures
def test_who_and_when_every_step_is_sent_numbered_and_every_answer_resolves(tmp_path):
    db = tmp_path / "ww.duckdb"
    ingest_paths([WHO_WHEN], db=db, options=ReadOptions(model="captain-agent"))
    load_labels([WHO_WHEN], db)
    human = {lab.instance_id: lab for lab in read_labels(WHO_WHEN)}
    questions = {}
    with read_connection(db) as con:
        for iid, question in con.execute("SELECT instance_id, input_text FROM instances").fetchall():
            questions[question] = iid

    def oracle(steps, body):
        """Names the people's step and agent, quoting its first line."""
        task = re.search(r"<task>\n(.*?)\n</task>", body["messages"][1]["content"], re.S).group(1)
        lab = human[questions[task]]
        step = next(s for s in steps if s["n"] == lab.step_index)
        quote = next(line for line in step["body"].splitlines() if line.strip())[:50]
        return {"first_error": {"step": lab.step_index, "agent": lab.agent, "quote": quote,
                                "category": "Reasoning Error", "error_title": "Follows a wrong lead",
                                "error_summary": "Scripted from the people's label."}, "not_model_error": None}

    with FakeLLMServer(first_error=oracle) as srv:
        srv.queue("transcript", "bad_step", "bad_quote", "bad_agent")
        summary = run(db, srv, concurrency=8)
        first = {}
        for body in srv.bodies("transcript"):
            if len(body["messages"]) == 2:  # a first request (a follow-up repeats it with the answer)
                first[body["messages"][1]["content"]] = body
        assert len(srv.bodies("transcript")) == 126 + 3 and len(first) == 126
        again = run(db, srv)
        assert len(srv.requests) == 129  # the re-run sends nothing

    # every request showed its transcript whole: every step, numbered, with its stored text
    with read_connection(db) as con:
        lengths = dict(con.execute("SELECT instance_id, count(*) FROM transcript_steps GROUP BY 1").fetchall())
        for body in first.values():
            task = re.search(r"<task>\n(.*?)\n</task>", body["messages"][1]["content"], re.S).group(1)
            iid = questions[task]
            assert step_ids(body) == list(range(lengths[iid]))
            stored = transcript_steps(con, *con.execute("SELECT run_id FROM runs").fetchall()[0], iid)
            sent = {s["n"]: s["body"] for s in shown_steps(body)}
            assert all((s["text"] or "") in sent[s["step_index"]] for s in stored)
    assert summary.transcripts.with_step == 126 and summary.transcripts.hard == 0 and again.analysed_now == 0
    assert every_stored_step_resolves(db) == 126  # 100%: the three spoilt answers were asked again, not stored
    assert q(db, "SELECT count(*) FROM llm_calls WHERE status = 'ok'")[0][0] == 129
    steps = agreement(db, MODEL).steps.as_json()
    assert steps["named"] == 126 and steps["accuracy"]["exact_step"]["k"] == 126
    assert steps["accuracy"]["agent"]["k"] == 126


# ---------------------------------------------------------------- segments


def long_transcript(n: int = 40, decisive: int | None = 25, huge: int | None = None) -> list[dict]:
    steps = [{"kind": "message", "role": "user", "text": "Find the flag hidden in the repository."}]
    for i in range(1, n):
        words = " ".join(f"line{i}-{k}" for k in range(60))
        if i == huge:
            words = " ".join(f"huge{i}-{k}" for k in range(3000))
        mark = " DECISIVE: deletes the only copy of the key." if i == decisive else ""
        if i % 2:
            steps.append({"kind": "tool call", "tool_name": "bash", "arguments": {"cmd": f"step {i} {words}{mark}"},
                          "tool_call_id": f"c{i}", "agent": "solver", "role": "assistant"})
        else:
            steps.append({"kind": "tool result", "tool_name": "bash", "text": f"output of {i}: {words}{mark}",
                          "tool_call_id": f"c{i - 1}", "role": "tool"})
    return steps


def marked(steps, body):
    """Names the step that says DECISIVE when it is shown, else no error in these steps."""
    hit = next((s for s in steps if "DECISIVE" in s["body"]), None)
    if hit is None:
        return {"first_error": None, "not_model_error": None}
    return {"first_error": {"step": hit["n"], "agent": "solver", "quote": "deletes the only copy of the key",
                            "category": "Wrong Tool or Arguments", "error_title": "Destroys what the task needs",
                            "error_summary": "Scripted."}, "not_model_error": None}


def test_a_long_transcript_is_read_in_overlapping_segments_until_the_error(tmp_db):
    seed_transcripts(tmp_db, [
        {"instance_id": "long", "is_correct": False, "output": "no flag", "steps": long_transcript()},
        {"instance_id": "clean", "is_correct": False, "output": "no flag", "steps": long_transcript(decisive=None)},
    ])
    with FakeLLMServer(first_error=marked) as srv:
        summary = run(tmp_db, srv, context_tokens=6000, max_tokens=512, concurrency=1)
        bodies = srv.bodies("transcript")
    budget = context_budget(MODEL, 512, 6000)
    assert all(sum(budget.count(m["content"]) for m in b["messages"]) <= budget.tokens for b in bodies)

    a = transcript_analysis_of(tmp_db, "long")
    read = a["segments_read"]["read"]
    assert a["step_index"] == 25 and a["step_agent"] == "solver" and a["category"] == "Wrong Tool or Arguments"
    assert read[-1]["first_step"] <= 25 <= read[-1]["last_step"] and len(read) < a["segments_read"]["segments"]
    assert read[0]["first_step"] == 0
    for before, after in zip(read, read[1:]):
        assert after["first_step"] == before["last_step"] - 2  # three steps shared
    of_long = [b for b in bodies if "<task>\ntask long\n</task>" in b["messages"][1]["content"]]
    assert len(of_long) == len(read)
    shown = sorted({n for b in of_long for n in step_ids(b)})
    assert shown == list(range(read[-1]["last_step"] + 1))  # no step skipped, none after the error's segment
    assert "read in" in a["context_note"] and "overlapping segments" in a["context_note"]

    clean = transcript_analysis_of(tmp_db, "clean")
    assert clean["step_index"] is None and clean["label"] == "No Model Error"
    assert clean["no_model_error"] == "the analyst found no error"
    assert len(clean["segments_read"]["read"]) == clean["segments_read"]["segments"]  # every segment read
    assert summary.transcripts.segmented == 2 and len(bodies) == len(read) + clean["segments_read"]["segments"]
    assert every_stored_step_resolves(tmp_db) == 1


def transcript_analysis_of(db, iid):
    with read_connection(db) as con:
        run_id = con.execute("SELECT run_id FROM runs").fetchall()[0][0]
        return transcript_analysis(con, run_id, iid, 0, MODEL)


def test_a_step_too_long_for_a_segment_is_cut_visibly(tmp_db):
    seed_transcripts(tmp_db, [{"instance_id": "huge", "is_correct": False, "output": "x",
                               "steps": long_transcript(n=12, decisive=9, huge=4)}])
    with FakeLLMServer(first_error=marked) as srv:
        run(tmp_db, srv, context_tokens=6000, max_tokens=512, concurrency=1)
        bodies = srv.bodies("transcript")
    step4 = next(s["body"] for b in bodies for s in shown_steps(b) if s["n"] == 4)
    assert "tokens cut by Faultline to fit the analyst's context" in step4
    a = transcript_analysis_of(tmp_db, "huge")
    assert a["step_index"] == 9 and "steps longer than a third of a segment cut to fit" in a["context_note"]
    assert "4 (" in a["context_note"]


# ---------------------------------------------------------------- wrong answers, abstention, money


def small(iid="t1", output="7") -> dict:
    return {"instance_id": iid, "is_correct": False, "output": output, "steps": [
        {"kind": "message", "role": "user", "text": "What is 3 + 4?"},
        {"kind": "tool call", "tool_name": "python", "arguments": {"code": "print(3 - 4)"}, "tool_call_id": "c1",
         "agent": "solver", "role": "assistant"},
        {"kind": "tool result", "tool_name": "python", "text": "-1", "tool_call_id": "c1", "role": "tool"},
        {"kind": "message", "agent": "solver", "role": "assistant", "text": "The answer is 7."}]}


def test_an_answer_that_never_resolves_is_an_abstention_not_a_step(tmp_db):
    seed_transcripts(tmp_db, [small()])

    def out_of_range(steps, body):
        return {"first_error": {"step": 99, "agent": "solver", "quote": "x", "category": "Calculation Error",
                                "error_title": "t", "error_summary": "s"}, "not_model_error": None}

    with FakeLLMServer(first_error=out_of_range) as srv:
        summary = run(tmp_db, srv)
        bodies = srv.bodies("transcript")
        assert len(bodies) == 3
        # each follow-up shows the answer back and says what is wrong with it
        assert "step 99 is not among the steps shown (0 to 3)" in bodies[1]["messages"][-1]["content"]
        assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
        again = run(tmp_db, srv)
        assert len(srv.requests) == 3 and again.stats.requests == 0
    a = transcript_analysis_of(tmp_db, "t1")
    assert (a["step_index"], a["step_quote"], a["category"], a["error_title"]) == (
        None, None, "Hard to Analyze", "No verifiable first error step")
    assert "step 99 is not among the steps shown" in a["error_summary"]
    assert summary.transcripts.hard == 1 and summary.unanalysed == 0
    assert q(tmp_db, "SELECT count(*) FROM llm_cache")[0][0] == 3  # paid for, so kept: the re-run bought none


@pytest.mark.parametrize("spoil, problem", [
    ("bad_quote", "the quote is not in step 3's text"),
    ("bad_agent", "agent 'Nobody_In_This_Run' is not one the transcript names (solver)"),
    ("bad_step", "is not among the steps shown (0 to 3)"),
])
def test_a_wrong_answer_is_asked_again_with_what_is_wrong(tmp_db, spoil, problem):
    seed_transcripts(tmp_db, [small()])
    with FakeLLMServer() as srv:
        srv.queue("transcript", spoil)
        run(tmp_db, srv)
        bodies = srv.bodies("transcript")
    assert len(bodies) == 2 and problem in bodies[1]["messages"][-1]["content"]
    a = transcript_analysis_of(tmp_db, "t1")
    # the scripted analyst names the last step when no step has an error
    assert (a["step_index"], a["step_agent"], a["step_quote"], a["category"], a["taxonomy_version"]) == (
        3, "solver", "The answer is 7.", "Tool Error Ignored", AGENT_VERSION)
    assert every_stored_step_resolves(tmp_db) == 1


def test_the_prompt_shows_the_task_verdict_answer_and_each_steps_agent_tool_and_error(tmp_db):
    item = small()
    item["steps"][2] = {**item["steps"][2], "error": "ZeroDivisionError: division by zero"}
    seed_transcripts(tmp_db, [item])
    with FakeLLMServer() as srv:
        run(tmp_db, srv)
        user = srv.bodies("transcript")[0]["messages"][1]["content"]
        system = srv.bodies("transcript")[0]["messages"][0]["content"]
    assert "<task>\nWhat is 3 + 4?\n</task>" not in user  # the task is the instance's input
    assert "<task>\ntask t1\n</task>" in user and "<reference_answers>\n- the answer\n</reference_answers>" in user
    assert "<verdict>\nThe benchmark judged this run a failure." in user
    assert "<final_output>\n7\n</final_output>" in user
    assert '<step n="1" agent="solver" role="assistant" kind="tool call" tool="python">' in user
    assert "error: ZeroDivisionError: division by zero" in user
    assert '<transcript steps="4" showing="the whole transcript">' in user
    assert "Tool Error Ignored: carries on as if a tool call had worked" in system
    assert "Environment Failure" in system


def test_answers_of_a_chain_are_kept_when_a_later_one_fails_and_a_rerun_buys_only_what_is_missing(tmp_db):
    seed_transcripts(tmp_db, [{"instance_id": "long", "is_correct": False, "output": "x",
                               "steps": long_transcript(decisive=25)}])
    srv = FakeLLMServer(first_error=None)
    calls = {"n": 0}

    def spoil_second_segment(steps, body):
        calls["n"] += 1
        if calls["n"] == 1:  # the first segment answers; the next three requests get cut-short JSON
            srv.queue("transcript", "truncated", "truncated", "truncated")
        return marked(steps, body)

    srv.first_error = spoil_second_segment
    with srv:
        first = run(tmp_db, srv, context_tokens=6000, max_tokens=512, concurrency=1)
        assert first.unanalysed == 1 and first.transcripts.unanalysed == 1
        assert len(srv.bodies("transcript")) == 4
        assert q(tmp_db, "SELECT count(*) FROM llm_cache")[0][0] == 1  # the first segment's answer, paid for
        second = run(tmp_db, srv, context_tokens=6000, max_tokens=512, concurrency=1)
        sent_again = srv.bodies("transcript")[4:]
    assert second.stats.cache_hits == 1 and step_ids(sent_again[0])[0] > 0  # segment 1 came from the cache
    a = transcript_analysis_of(tmp_db, "long")
    assert a["step_index"] == 25 and len(a["segments_read"]["read"]) == 1 + len(sent_again)


def test_max_cost_is_a_ceiling_across_the_chains_and_a_rerun_pays_for_nothing_twice(tmp_db):
    seed_transcripts(tmp_db, [small(f"t{i}", output=f"{i}") for i in range(6)])
    with FakeLLMServer() as srv:
        capped = run(tmp_db, srv, PRICED, max_cost=0.0015, concurrency=1, max_tokens=512)
        assert capped.stopped is not None and "--max-cost" in capped.stopped
        spent = q(tmp_db, "SELECT sum(cost_usd) FROM llm_calls")[0][0]
        assert 0 < spent <= 0.0015
        paid = len(srv.requests)
        done = run(tmp_db, srv, PRICED, max_cost=1.0, concurrency=1, max_tokens=512)
        assert done.stopped is None and done.transcripts.with_step + capped.transcripts.with_step == 6
        # every prompt paid for once
        assert len(srv.requests) == 6 and len(srv.requests) - paid == done.stats.requests
    assert q(tmp_db, "SELECT count(DISTINCT cache_key), count(*) FROM llm_calls")[0] == (6, 6)


def test_transcripts_go_through_the_batch_api_too(tmp_db):
    seed_transcripts(tmp_db, [small(f"t{i}", output=f"{i}") for i in range(3)])
    with FakeLLMServer() as srv:
        summary = run(tmp_db, srv, PRICED, batch=True, poll_interval=0.05)
        assert len(srv.requests) == 0 and [b["purpose"] for b in srv.batch_lines] == ["transcript"] * 3
    assert summary.transcripts.with_step == 3 and every_stored_step_resolves(tmp_db, PRICED) == 3


def test_verify_leaves_transcript_analyses_out_and_says_so(tmp_db):
    from seed_store import seed
    from taxonomy.verify import verify

    seed(tmp_db, [{"model": "agent-model", "dataset": "qa", "instance_id": "p1", "is_correct": False,
                   "output": "Paris is in Spain"}])
    seed_transcripts(tmp_db, [small()])
    with FakeLLMServer() as srv:
        run(tmp_db, srv)
        checked = verify(tmp_db, MODEL, analyst=MODEL,
                         settings=LLMSettings(api_base=srv.api_base, timeout=5.0, backoff_s=0.01))
        assert srv.count("verification") == 1
    assert (checked.selected, checked.transcripts) == (1, 1)
    assert "1 analyses of agent transcripts left out" in checked.line()


def test_a_window_too_small_for_any_steps_is_refused_before_anything_is_sent(tmp_db):
    from conftest import run_module

    seed_transcripts(tmp_db, [small()])
    with FakeLLMServer() as srv:
        done = run_module("taxonomy", "analyze", "--db", tmp_db, "--analyst", MODEL, "--api-base", srv.api_base,
                          "--context-tokens", "1200", "--max-tokens", "256")
        assert len(srv.requests) == 0
    assert done.returncode == 2 and "too few to read steps" in done.stderr and "Traceback" not in done.stderr
