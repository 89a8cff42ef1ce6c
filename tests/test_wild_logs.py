"""Logs as they are in the wild (issue 33): shapes real users' files have that the readers once
refused, crashed on or passed over in silence. Every fixture is generated here, into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import q, run_module

from ingest import IngestError, ReadOptions, ingest_paths
from ingest.walk import HIDDEN


def hand_crafted(path: Path, qid: str, *, is_corrected: bool, filler: int = 0) -> Path:
    """A Who&When hand-crafted log: the agent in `role`, the verdict as `is_corrected`, the keys
    that tell the format after a history that can be long."""
    history = [{"content": "Find how many moons Mars has.", "role": "human"},
               {"content": "Plan: ask the WebSurfer." + " x" * filler, "role": "Orchestrator (thought)"},
               {"content": "Mars has 2 moons.", "role": "WebSurfer"}]
    data = {"history": history, "question": "How many moons has Mars?", "level": "1", "ground_truth": "2",
            "question_ID": qid, "is_corrected": is_corrected, "mistake_agent": "WebSurfer", "mistake_step": "2",
            "mistake_reason": "It did not check."}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_who_when_hand_crafted_is_corrected_and_a_long_history(tmp_path, tmp_db):
    folder = tmp_path / "hand-crafted"
    big = hand_crafted(folder / "1.json", "q1", is_corrected=False, filler=100_000)
    hand_crafted(folder / "2.json", "q2", is_corrected=True)
    assert 200_000 < big.stat().st_size < 210_000 and big.read_bytes()[:65536].find(b'"mistake_agent"') == -1
    summary = ingest_paths([folder], db=tmp_db, options=ReadOptions(model="gpt-4o"))
    assert (summary.runs, summary.predictions, summary.failures, summary.steps) == (1, 2, 1, 6)
    assert q(tmp_db, "SELECT instance_id, is_correct FROM predictions ORDER BY 1") == [("q1", False), ("q2", True)]
    # the agent speaks in role; a role Who&When's chat roles know (human) is the role itself
    assert q(tmp_db, "SELECT step_index, role, agent FROM transcript_steps WHERE instance_id = 'q1' ORDER BY 1") == [
        (0, "user", None), (1, "assistant", "Orchestrator (thought)"), (2, "assistant", "WebSurfer")]
    # the 200 KB file alone, and with --format who-when, too
    for fmt in ("auto", "who-when"):
        r = run_module("ingest", big, "--db", tmp_path / f"{fmt}.duckdb", "--model", "gpt-4o", "--format", fmt)
        assert r.returncode == 0 and "ingested 1 runs, 1 predictions, 1 failures" in r.stdout, r.stderr


def chat(path: Path, messages: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


MAGENTIC = [
    {"role": "user", "content": "How many moons has Mars?"},
    {"role": "assistant", "content": "I will search.", "name": "Orchestrator",
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "web_search", "arguments": "{\"q\": \"Mars moons\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "name": "web_search", "content": "Phobos and Deimos."},
    {"role": "assistant", "content": [{"type": "text", "text": "Mars has 2 moons."}], "name": "Orchestrator"},
]


def test_a_json_array_of_messages_is_a_transcript(tmp_path, tmp_db):
    folder = tmp_path / "magentic-one"
    chat(folder / "task-1.json", MAGENTIC)
    chat(folder / "task-2.json", MAGENTIC[:2] + [{"role": "assistant", "content": "I give up."}])
    resolved = tmp_path / "resolved.txt"
    resolved.write_text("task-1\n")
    summary = ingest_paths([folder], db=tmp_db, options=ReadOptions(model="gpt-4o", dataset="gaia",
                                                                     verdicts=(str(resolved),)))
    assert (summary.runs, summary.predictions, summary.failures, summary.unscored) == (1, 2, 1, 0)
    # task-1: user, assistant text + its call, tool result, assistant; task-2: user, text + call, assistant
    assert (summary.steps, summary.tool_calls) == (5 + 4, 2)
    assert q(tmp_db, "SELECT model, dataset, source_format FROM runs") == [("gpt-4o", "gaia", "messages")]
    assert q(tmp_db, "SELECT i.instance_id, i.input_text, p.output_text, p.is_correct FROM predictions p "
                     "JOIN instances i USING (run_id, instance_id) ORDER BY 1") == [
        ("task-1", "How many moons has Mars?", "Mars has 2 moons.", True),
        ("task-2", "How many moons has Mars?", "I give up.", False)]
    assert q(tmp_db, "SELECT kind, agent, tool_name FROM transcript_steps WHERE instance_id = 'task-1' "
                     "ORDER BY step_index") == [("message", None, None), ("message", "Orchestrator", None),
                                                ("tool call", "Orchestrator", "web_search"),
                                                ("tool result", None, "web_search"), ("message", "Orchestrator", None)]
    # one file, without a verdict: stored unscored, the summary says so
    one = ingest_paths([folder / "task-1.json"], db=tmp_path / "one.duckdb",
                       options=ReadOptions(model="gpt-4o", dataset="gaia"))
    assert (one.predictions, one.unscored) == (1, 1)
    assert any("have no verdict" in r and "--verdicts FILE" in r for r in one.remarks)


def test_a_json_array_of_messages_without_model_or_dataset(tmp_path, tmp_db):
    file = chat(tmp_path / "chats" / "a.json", MAGENTIC)
    r = run_module("ingest", file, "--db", tmp_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {file.parent}: ") and "pass --model NAME" in r.stderr
    r = run_module("ingest", file, "--db", tmp_db, "--model", "gpt-4o")
    assert r.returncode == 2 and "pass --dataset NAME" in r.stderr


def test_a_table_with_messages_and_no_output_column_is_a_transcript(tmp_path, tmp_db):
    rows = [{"instance_id": "t1", "messages": MAGENTIC, "correct": True},
            {"instance_id": "t2", "messages": MAGENTIC[:1] + [{"role": "assistant", "content": "3"}], "correct": False}]
    jsonl = tmp_path / "agent.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    csv = tmp_path / "agent.csv"
    csv.write_text("instance_id,messages,correct\n" + "".join(
        f"{r['instance_id']},\"{json.dumps(r['messages']).replace(chr(34), chr(34) * 2)}\",{r['correct']}\n" for r in rows),
        encoding="utf-8")
    for file in (jsonl, csv):
        db = tmp_path / f"{file.suffix[1:]}.duckdb"
        r = run_module("ingest", file, "--db", db, "--model", "gpt-4o")
        assert r.returncode == 0, r.stderr
        assert "ingested 1 runs, 2 predictions, 1 failures" in r.stdout and "transcript steps (1 tool calls)" in r.stdout
        assert q(db, "SELECT instance_id, output_text FROM predictions ORDER BY 1") == [
            ("t1", "Mars has 2 moons."), ("t2", "3")]
    # a chat dataset (messages, no ids) is still named as one, not read as predictions
    chats = tmp_path / "chats.jsonl"
    chats.write_text(json.dumps({"messages": MAGENTIC}) + "\n", encoding="utf-8")
    r = run_module("ingest", chats, "--db", tmp_db, "--model", "gpt-4o")
    assert r.returncode == 2 and "looks like a chat dataset" in r.stderr


def swe_trajectory(path: Path) -> Path:
    traj = {"trajectory": [{"thought": "Look.", "action": "ls", "observation": "a.py"}],
            "history": [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Fix it."}],
            "info": {"exit_status": "submitted", "submission": "diff --git a/a.py b/a.py"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(traj), encoding="utf-8")
    return path


def test_a_load_that_skipped_everything_fails_with_the_reason(tmp_path, tmp_db):
    folder = tmp_path / "run"
    swe_trajectory(folder / "repo__repo-1.traj")
    swe_trajectory(folder / "repo__repo-2.traj")
    r = run_module("ingest", folder, "--db", tmp_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "ingested" not in r.stdout
    assert r.stderr.startswith("error: nothing loaded: every log found was skipped\n")
    assert f"pass --model NAME (1): {folder}" in r.stderr
    assert not tmp_db.exists()
    r = run_module("ingest", folder, "--db", tmp_db, "--model", "gpt-4o", "--dataset", "swe-bench")
    assert r.returncode == 0 and "ingested 1 runs, 2 predictions" in r.stdout, r.stderr


def inspect_log(path: Path, *, task: object = "arith", model: object = "openai/gpt-4o", scorer: object = "grader",
                values: tuple = ({"correct": "C"}, {"correct": "I"})) -> Path:
    """A small Inspect .json log whose scorer gives a dict (its `correct` field is the headline)."""
    samples = [{"id": n + 1, "epoch": 1, "input": f"{n}+1?", "target": str(n + 1), "output": {"completion": "1"},
                "scores": {"grader": {"value": value}}} for n, value in enumerate(values)]
    log = {"version": 2, "status": "success",
           "eval": {"task": task, "model": model, "created": "2025-01-01T00:00:00+00:00", "run_id": path.stem},
           "results": {"total_samples": len(samples), "completed_samples": len(samples),
                       "scores": [{"name": "correct", "scorer": scorer,
                                   "metrics": {"accuracy": {"name": "accuracy", "value": 0.5}}}]},
           "samples": samples}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


def test_one_malformed_inspect_log_does_not_stop_its_folder(tmp_path, tmp_db):
    folder = tmp_path / "logs"
    inspect_log(folder / "a-good.json")
    # an early R writer boxes every value in a list: a one-element list is the value it holds
    inspect_log(folder / "b-boxed.json", task=["arith"], scorer=["grader"], model="openai/gpt-4o-mini")
    broken = inspect_log(folder / "c-broken.json", scorer=["grader", "judge"], model="openai/o1")
    summary = ingest_paths([folder], db=tmp_db)
    assert (summary.runs, summary.predictions, summary.failures) == (2, 4, 2)
    assert q(tmp_db, "SELECT model, dataset, main_metric FROM runs ORDER BY 1") == [
        ("openai/gpt-4o", "arith", "grader/correct"), ("openai/gpt-4o-mini", "arith", "grader/correct")]
    why = "results.scores.*.scorer: a list of 2 values where Inspect writes one (['grader', 'judge'])"
    assert summary.skipped == {why: [str(broken)]}
    assert f"  {why} (1): {broken}" in summary.details()
    # named alone, it is refused, naming the file
    r = run_module("ingest", broken, "--db", tmp_db)
    assert (r.returncode, r.stderr) == (2, f"error: {broken}: {why}\n")


def test_placeholder_names_and_hidden_folders_are_said(tmp_path, tmp_db):
    folder = tmp_path / "logs"
    inspect_log(folder / "good.json")
    dots = inspect_log(folder / "dots.json", task="...", model="...")
    hidden = inspect_log(folder / "..foo" / "more.json", model="openai/o1")
    summary = ingest_paths([folder], db=tmp_db)
    assert (summary.runs, summary.predictions) == (1, 2)
    missing = ("eval.model is '...', a placeholder, not a name; eval.task is '...', a placeholder, not a name "
               "(pass --model NAME and --dataset NAME)")
    assert summary.skipped == {missing: [str(dots)], HIDDEN: [str(hidden.parent)]}
    assert f"  {HIDDEN} (1): {hidden.parent}" in summary.details()
    # named, each is read: the hidden folder as any folder, the placeholders with the flags given
    assert ingest_paths([hidden.parent], db=tmp_path / "h.duckdb").runs == 1
    try:
        ingest_paths([dots], db=tmp_path / "d.duckdb")
        raise AssertionError("a log naming no model was read")
    except IngestError as exc:
        assert exc.message == f"{dots}: {missing}"
    named = tmp_path / "n.duckdb"
    ingest_paths([dots], db=named, options=ReadOptions(model="gpt-4o", dataset="arith"))
    assert q(named, "SELECT model, dataset, dataset_raw FROM runs") == [("gpt-4o", "arith", None)]
