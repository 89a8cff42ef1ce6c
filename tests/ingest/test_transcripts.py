"""Transcripts from generated logs of each shape: Inspect events (sub-agents, scorers, limits,
errors, attachments) read whole and streamed alike, texts cut at the cap with their length
kept, malformed tool calls marked, hostile shapes refused naming the file, steps replaced on
re-ingest and carried by merge, and the store's transcript queries."""

from __future__ import annotations

import json

import duckdb
import pytest

from conftest import q, run_module
from inspect_gen import EXPECTED, STEPS, agent_sample, write_eval
from ingest import ReadOptions, ingest_paths
from ingest.sources import inspect_log
from store import transcripts


def test_inspect_events_become_steps_once(tmp_path, tmp_db):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    summary = ingest_paths([log], db=tmp_db)
    assert q(tmp_db, STEPS) == EXPECTED
    assert (summary.steps, summary.tool_calls, summary.failures) == (12, 2, 1)
    assert q(tmp_db, "SELECT input_tokens, output_tokens, seconds, model, finish_reason FROM transcript_steps "
                     "WHERE step_index = 2") == [(10, 5, 1.5, "openai/gpt-4o", "tool_calls")]
    # the prompt is what the agent was asked, not its whole run
    assert q(tmp_db, "SELECT prompt_text FROM instances") == [
        ("[system] You are an agent.\n\n[user] What is six times seven? Work in the sandbox.",)]


def test_a_large_sample_is_streamed_with_the_same_steps(tmp_path, monkeypatch):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    whole, streamed = tmp_path / "whole.duckdb", tmp_path / "streamed.duckdb"
    ingest_paths([log], db=whole)
    monkeypatch.setattr(inspect_log, "STREAM_MEMBER_BYTES", 0)
    ingest_paths([log], db=streamed)
    assert q(streamed, STEPS) == q(whole, STEPS) == EXPECTED
    columns = "instance_id, is_correct, score, output_text"
    assert q(streamed, f"SELECT {columns} FROM predictions") == q(whole, f"SELECT {columns} FROM predictions")


def test_a_text_over_the_cap_is_cut_with_its_length_kept(tmp_path, tmp_db, monkeypatch):
    monkeypatch.setenv("FAULTLINE_STEP_TEXT_CHARS", "20")
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    summary = ingest_paths([log], db=tmp_db)
    assert q(tmp_db, "SELECT text, text_chars, tool_arguments FROM transcript_steps WHERE step_index IN (1, 3) "
                     "ORDER BY step_index") == [
        ("What is six times se", 45, None), ('{"cmd":"ls -la xxxxx', 77, None)]
    assert summary.steps == 12


def tau_record(task_id, trial, reward, traj=None):
    return {"task_id": task_id, "trial": trial, "reward": reward, "info": {"task": {"instruction": "book it"}},
            "traj": traj if traj is not None else [
                {"role": "system", "content": "# Retail agent policy\nBe nice."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "find_user", "arguments": '{"id": 1'}}]},
                {"role": "tool", "tool_call_id": "t1", "name": "find_user", "content": "Error: bad id"},
                {"role": "assistant", "content": "Sorry."}]}


def test_tau_bench_shape_and_a_malformed_tool_call(tmp_path, tmp_db):
    results = tmp_path / "tool-calling-gpt-4o-0.0_range_0-2_user-gpt-4o-llm_0101.json"
    results.write_text(json.dumps([tau_record(0, 0, 1.0), tau_record(0, 1, 0.0), tau_record(1, 0, 0.0)]))
    summary = ingest_paths([results], db=tmp_db)  # the model from tau-bench's own file name
    assert (summary.predictions, summary.failures, summary.steps, summary.tool_calls) == (3, 2, 15, 3)
    assert q(tmp_db, "SELECT model, dataset, domain FROM runs") == [("gpt-4o", "tau-bench", "retail")]
    assert q(tmp_db, "SELECT DISTINCT tool_arguments, text, error LIKE 'malformed tool call: %' FROM transcript_steps "
                     "WHERE kind = 'tool call'") == [(None, '{"id": 1', True)]
    assert q(tmp_db, "SELECT instance_id, train_trial_index, is_correct FROM predictions ORDER BY 1, 2") == [
        ("retail/0", 0, True), ("retail/0", 1, False), ("retail/1", 0, False)]


@pytest.mark.parametrize("name, content, problem", [
    ("tool-calling-m-0.0_range_0-1_user-x_1.json", [tau_record(0, 0, "x")],
     ": [0]: reward: expected a number from 0 to 1, found 'x'"),
    ("tool-calling-m-0.0_range_0-1_user-x_1.json", [tau_record(0, 0, 1.0, traj={"role": "user"})],
     ": [0].traj: expected a list of messages, found dict"),
    ("tool-calling-m-0.0_range_0-1_user-x_1.json", [tau_record(0, 0, 1.0, traj=[{"content": "hi"}])],
     ": [0].traj[0]: role: expected text, found nothing"),
    ("tool-calling-m-0.0_range_0-1_user-x_1.json", [tau_record(0, 0, 1.0), tau_record(0, 0, 0.0)],
     ": [1]: instance 'retail/0' trial 0 already read from [0]"),
    ("output.jsonl", {"instance_id": "a", "history": {"kind": "x"}, "metadata": {"llm": {"model": "m"}, "dataset": "d"}},
     ":1: history: expected a list of events, found dict"),
    ("1.json", {"is_correct": "no", "question": "q", "question_ID": "q1", "ground_truth": "a",
                "history": [{"role": "user", "name": "A", "content": "hi"}], "mistake_agent": "A"},
     ": is_correct: expected true or false, found 'no'"),
    ("t.json", {"schema_version": "ATIF-v1.5", "session_id": "s", "agent": {"name": "a", "model_name": "m"},
                "steps": {"step_id": 1}}, ": steps: expected list, found dict"),
    ("x.traj", {"trajectory": [{"thought": "t", "action": ["ls"], "observation": "o"}], "history": [],
                "info": {}, "replay_config": {"agent": {"model": {"name": "m"}}, "env": {"deployment": {"dataset_name": "d"}}}},
     ": trajectory[0]: action: expected text, found list"),
])
def test_hostile_agent_logs_are_refused_naming_the_place(tmp_path, tmp_db, name, content, problem):
    path = tmp_path / name
    path.write_text(json.dumps(content) if name != "output.jsonl" else json.dumps(content) + "\n")
    r = run_module("ingest", path, "--db", tmp_db, "--model", "m", "--dataset", "d")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"error: {path}") and problem in r.stderr, r.stderr
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM transcript_steps") == [(0,)]


def test_steps_are_replaced_on_reingest_and_carried_by_merge(tmp_path):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    a, merged = tmp_path / "a.duckdb", tmp_path / "m.duckdb"
    ingest_paths([log], db=a)
    ingest_paths([log], db=a)
    assert q(a, "SELECT count(*) FROM transcript_steps") == [(12,)]
    r = run_module("ingest", "merge", a, "--db", merged)
    assert r.returncode == 0, r.stderr
    assert q(merged, f"SELECT run_id, {STEPS[7:]}") == q(a, f"SELECT run_id, {STEPS[7:]}")


def test_transcript_queries(tmp_path, tmp_db):
    log = write_eval(tmp_path / "agent.eval", [agent_sample()])
    ingest_paths([log], db=tmp_db)
    con = duckdb.connect(str(tmp_db), read_only=True)
    try:
        run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
        assert transcripts.transcript_size(con, run_id, "7") == 12
        page = transcripts.transcript_page(con, run_id, "7", start=4, limit=3)
        assert page["step_index"].to_list() == [4, 5, 6]
        counts = transcripts.step_counts(con).row(0, named=True)
        assert (counts["n_steps"], counts["n_tool_calls"], counts["n_tool_errors"], counts["n_errors"],
                counts["n_events"], counts["first_error_step"], counts["agents"]) == (12, 2, 1, 1, 2, 7, ["researcher"])
        tools = transcripts.tool_use(con).select("tool", "calls", "errors", "error_share").rows()
        assert tools == [("python", 1, 1, 1.0), ("bash", 1, 0, 0.0)]
        across = transcripts.question_across_models(con, "agentic", "7").row(0, named=True)
        assert (across["model"], across["is_correct"], across["n_steps"], across["first_error_step"],
                across["first_error"], across["last_step_kind"]) == ("openai/gpt-4o", False, 12, 7,
                                                                     "timeout: took too long", "error")
    finally:
        con.close()


def test_a_chat_messages_column_is_a_transcript(tmp_path, tmp_db):
    rows = tmp_path / "agents.jsonl"
    messages = [{"role": "user", "content": "plan a trip"},
                {"role": "assistant", "name": "planner", "content": "I'll ask the booker.",
                 "tool_calls": [{"id": "k", "type": "function", "function": {"name": "book", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "k", "name": "book", "content": "booked"},
                {"role": "assistant", "name": "booker", "content": "Done."}]
    rows.write_text(json.dumps({"model": "m", "instance_id": "1", "output": "Done.", "correct": True,
                                "conversation": messages, "sent": "PROMPT", "why": "judge says fine",
                                "stop": "stop", "sys": "Be brief."}) + "\n")
    summary = ingest_paths([rows], db=tmp_db, options=ReadOptions(column_map={
        "messages": "conversation", "prompt": "sent", "judge_explanation": "why", "finish_reason": "stop",
        "instructions": "sys"}))
    assert (summary.steps, summary.tool_calls) == (5, 1)
    assert q(tmp_db, "SELECT agent, kind FROM transcript_steps ORDER BY step_index") == [
        (None, "message"), ("planner", "message"), ("planner", "tool call"), (None, "tool result"), ("booker", "message")]
    assert q(tmp_db, "SELECT i.prompt_text, p.finish_reason, p.judge_notes->>'$[0].explanation', r.instructions "
                     "FROM predictions p JOIN instances i USING (run_id, instance_id) JOIN runs r USING (run_id)") == [
        ("PROMPT", "stop", "judge says fine", "Be brief.")]


def test_steps_staged_on_disk_arrive_whole(tmp_path, monkeypatch):
    """A load over one chunk is staged as Parquet before it enters the store: its steps too."""
    first = write_eval(tmp_path / "one.eval", [agent_sample()])
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"model": "m", "instance_id": "1", "output": "x", "correct": True}) + "\n")
    second_sample = agent_sample()
    second_sample["id"] = 8
    second = write_eval(tmp_path / "two.eval", [second_sample])
    in_memory, staged = tmp_path / "memory.duckdb", tmp_path / "staged.duckdb"
    ingest_paths([first, plain, second], db=in_memory)
    monkeypatch.setenv("FAULTLINE_INGEST_CHUNK_BYTES", "1")  # every run its own chunk on disk
    ingest_paths([first, plain, second], db=staged)
    rows = f"SELECT r.source_path, s.instance_id, {STEPS[7:].replace('FROM transcript_steps', 'FROM transcript_steps s JOIN runs r USING (run_id)').replace('ORDER BY step_index', 'ORDER BY ALL')}"
    assert q(staged, rows) == q(in_memory, rows)
    assert q(staged, "SELECT count(*) FROM transcript_steps") == [(24,)]
