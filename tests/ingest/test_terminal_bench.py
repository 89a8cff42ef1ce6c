"""Terminal-Bench `tb run` output (issue 33): a run folder generated here as the harness writes it
(terminal_bench/harness/harness.py and models.py, handlers/trial_handler.py, terminal/tmux_session.py),
two tasks × three trials, read with its accuracy checked and each trial's steps."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from conftest import q, run_module

from ingest import ReadOptions, ingest_paths
from ingest.registry import choose

RUN_ID = "2025-07-01__12-00-00"
INSTRUCTIONS = {"hello-world": "Create a file called hello.txt in the current directory with \"Hello, world!\" in it.",
                "fix-permissions": "A script in /app cannot be executed. Make /app/process_data.sh executable."}
# (task, attempt): (is_resolved, failure_mode, parser_results); attempt k sends k commands of its own
TRIALS = {
    ("hello-world", 1): (True, "none", {"test_hello_file_exists": "passed", "test_hello_file_content": "passed"}),
    ("hello-world", 2): (True, "none", {"test_hello_file_exists": "passed", "test_hello_file_content": "passed"}),
    ("hello-world", 3): (False, "none", {"test_hello_file_exists": "passed", "test_hello_file_content": "failed"}),
    # an agent that ran out of time: the harness still runs the tests
    ("fix-permissions", 1): (False, "agent_timeout", {"test_script_is_executable": "failed"}),
    # tests that timed out: no test result, counted as unresolved
    ("fix-permissions", 2): (None, "test_timeout", None),
    ("fix-permissions", 3): (False, "none", {"test_script_is_executable": "failed"}),
}
N_ATTEMPTS = 3
AGENT_COMMANDS = ["ls -la\n", 'echo "Hello, world!" > hello.txt\n', "cat hello.txt\n"]


def trial_results(task: str, attempt: int) -> dict:
    """TrialResults.model_dump() (terminal_bench/harness/models.py), fields in the model's order."""
    resolved, mode, parsed = TRIALS[(task, attempt)]
    name = f"{task}.{attempt}-of-{N_ATTEMPTS}.{RUN_ID}"
    return {"id": str(uuid.uuid4()), "trial_name": name, "task_id": task, "instruction": INSTRUCTIONS[task],
            "is_resolved": resolved, "failure_mode": mode, "parser_results": parsed,
            "recording_path": f"{RUN_ID}/{task}/{name}/sessions/agent.cast", "total_input_tokens": 1200 * attempt,
            "total_output_tokens": 100 * attempt, "n_commands": attempt,
            "trial_started_at": "2025-07-01T12:00:05.000000+00:00", "trial_ended_at": "2025-07-01T12:02:05.000000+00:00",
            "agent_started_at": "2025-07-01T12:00:10.000000+00:00", "agent_ended_at": "2025-07-01T12:01:40.000000+00:00",
            "test_started_at": "2025-07-01T12:01:45.000000+00:00", "test_ended_at": "2025-07-01T12:02:00.000000+00:00"}


def commands(attempt: int) -> str:
    """commands.txt: `repr(keys)` per send_keys — the harness's recording start and clear, the
    agent's keys, the tests session's recording, the test run, and the sessions' C-d at stop."""
    sent = [["asciinema rec --stdin /logs/agent.cast", "Enter"], ["clear", "Enter"],
            *AGENT_COMMANDS[:attempt],
            ["asciinema rec --stdin /logs/tests.cast", "Enter"], ["clear", "Enter"],
            ["bash ", "/tests/run-tests.sh", "Enter"], ["C-d"], ["C-d"]]
    return "".join(f"{keys!r}\n" for keys in sent)


def write_run(root: Path, *, metadata: bool = True) -> Path:
    """A `tb run --n-attempts 3` output folder of two tasks."""
    run = root / RUN_ID
    run.mkdir(parents=True)
    results = []
    for (task, attempt) in TRIALS:
        entry = trial_results(task, attempt)
        results.append(entry)
        trial = run / task / entry["trial_name"]
        for sub in ("sessions", "panes", "agent-logs/episode-0"):
            (trial / sub).mkdir(parents=True)
        (trial / "results.json").write_text(json.dumps(entry, indent=4))
        (trial / "commands.txt").write_text(commands(attempt))
        (trial / "sessions" / "agent.log").write_bytes(
            b"\x1b[?2004hroot@c0ffee:/app# ls -la\r\n\x1b[?2004ltotal 8\r\nroot@c0ffee:/app# \x1b[K")
        (trial / "sessions" / "agent.cast").write_text('{"version": 2, "width": 160, "height": 40}\n[0.5, "o", "$ "]\n')
        (trial / "panes" / "pre-agent.txt").write_text("root@c0ffee:/app#\n")
        (trial / "panes" / "post-agent.txt").write_text(f"root@c0ffee:/app# cat hello.txt\nHello, world! ({attempt})\n")
        (trial / "panes" / "post-test.txt").write_text("===== 1 failed, 1 passed in 0.05s =====\n")
        (trial / "agent-logs" / "episode-0" / "prompt.txt").write_text(INSTRUCTIONS[task])
        (trial / "agent-logs" / "episode-0" / "response.txt").write_text('{"commands": [{"keystrokes": "ls -la\\n"}]}')
    n_resolved = sum(1 for r in results if r["is_resolved"])
    benchmark = {"id": str(uuid.uuid4()), "results": results, "pass_at_k": {"2": 0.5, "3": 0.5},
                 "n_resolved": n_resolved, "n_unresolved": len(results) - n_resolved,
                 "resolved_ids": [r["task_id"] for r in results if r["is_resolved"]],
                 "unresolved_ids": [r["task_id"] for r in results if not r["is_resolved"]],
                 "accuracy": n_resolved / len(results)}
    (run / "results.json").write_text(json.dumps(benchmark, indent=4))
    if metadata:
        (run / "run_metadata.json").write_text(json.dumps({
            "run_id": RUN_ID, "uuid": str(uuid.uuid4()), "dataset_path": None, "dataset_name": "terminal-bench-core",
            "dataset_version": "0.1.1", "output_path": str(root), "agent_name": "terminus", "no_rebuild": False,
            "cleanup": False, "log_level": 20, "task_ids": list(INSTRUCTIONS), "exclude_task_ids": None, "n_tasks": None,
            "n_concurrent_trials": 4, "n_attempts": N_ATTEMPTS, "dataset_size": 2, "accuracy": n_resolved / len(results),
            "model_name": "anthropic/claude-3-7-latest", "start_time": "2025-07-01T12:00:00+00:00",
            "end_time": "2025-07-01T12:10:00+00:00", "commit_hash": "unknown", "username": "unknown", "s3_bucket": None,
            "agent_kwargs": None, "pass_at_k": {"2": 0.5, "3": 0.5}, "resumed_at": None}, indent=4))
    (run / "tb.lock").write_text(json.dumps({"lockfile_version": "1.0", "created_at": "2025-07-01T12:00:00"}))
    (run / "run.log").write_text("INFO Starting harness run\n")
    return run


def test_a_run_of_two_tasks_by_three_trials(tmp_path, tmp_db):
    run = write_run(tmp_path / "runs")
    assert [s.name for s in choose(tmp_path / "runs")] == ["terminal-bench"]
    summary = ingest_paths([tmp_path / "runs"], db=tmp_db)
    # 2 of 6 trials resolved: the harness's accuracy, over trials (a trial without a test result fails)
    assert (summary.runs, summary.predictions, summary.failures, summary.unscored) == (1, 6, 4, 0)
    assert (summary.steps, summary.tool_calls) == (74, 12)
    assert summary.skipped == {}
    assert q(tmp_db, "SELECT source_format, model, dataset, harness_metric, harness_value, harness_n, harness_agrees, "
             "harness_note FROM runs") == [
        ("terminal-bench", "anthropic/claude-3-7-latest", "terminal-bench-core", "accuracy", 1 / 3, 6, True,
         "agrees: 0.333333 = 2/6 (accuracy)")]
    assert json.loads(q(tmp_db, "SELECT settings FROM runs")[0][0]) == {
        "harness": "terminal-bench", "agent": "terminus", "dataset_version": "0.1.1", "n_attempts": 3, "run_id": RUN_ID}
    # the trials of a task share its instance id, told apart by the trial index (attempt - 1)
    assert q(tmp_db, "SELECT instance_id, train_trial_index, is_correct, error_message, output_tokens, verdict_note "
             "FROM predictions ORDER BY 1, 2") == [
        ("fix-permissions", 0, False, "failure mode: agent_timeout", 100, None),
        ("fix-permissions", 1, False, "failure mode: test_timeout", 200,
         "the harness has no test result for this trial (failure mode test_timeout): Terminal-Bench counts it as unresolved"),
        ("fix-permissions", 2, False, None, 300, None),
        ("hello-world", 0, True, None, 100, None),
        ("hello-world", 1, True, None, 200, None),
        ("hello-world", 2, False, None, 300, None)]
    assert q(tmp_db, "SELECT instance_id, input_text FROM instances ORDER BY 1") == sorted(INSTRUCTIONS.items())
    # steps per trial: the instruction, the keys sent (attempt k: k of the agent's, 7 of the
    # harness's), the terminal log, the failure mode when there is one, the screen after the tests
    assert q(tmp_db, "SELECT instance_id, train_trial_index, count(*), count(*) FILTER (kind = 'tool call') "
             "FROM transcript_steps GROUP BY 1, 2 ORDER BY 1, 2") == [
        ("fix-permissions", 0, 12, 1), ("fix-permissions", 1, 13, 2), ("fix-permissions", 2, 13, 3),
        ("hello-world", 0, 11, 1), ("hello-world", 1, 12, 2), ("hello-world", 2, 13, 3)]
    assert q(tmp_db, "SELECT step_index, kind, role, agent, tool_name, text, error FROM transcript_steps "
             "WHERE instance_id = 'fix-permissions' AND train_trial_index = 0 ORDER BY 1") == [
        (0, "message", "user", None, None, INSTRUCTIONS["fix-permissions"], None),
        (1, "system event", "system", "harness", None, "asciinema rec --stdin /logs/agent.cast<Enter>", None),
        (2, "system event", "system", "harness", None, "clear<Enter>", None),
        (3, "tool call", "assistant", None, "terminal", "ls -la<Enter>", None),
        (4, "system event", "system", "harness", None, "asciinema rec --stdin /logs/tests.cast<Enter>", None),
        (5, "system event", "system", "harness", None, "clear<Enter>", None),
        (6, "system event", "system", "harness", None, "bash /tests/run-tests.sh<Enter>", None),
        (7, "system event", "system", "harness", None, "<C-d>", None),
        (8, "system event", "system", "harness", None, "<C-d>", None),
        (9, "tool result", "environment", None, "terminal", "root@c0ffee:/app# ls -la\ntotal 8\nroot@c0ffee:/app# ", None),
        (10, "error", "system", "harness", None, "failure mode: agent_timeout", "agent_timeout"),
        (11, "system event", "system", "harness", None, "===== 1 failed, 1 passed in 0.05s =====\n", None)]
    assert q(tmp_db, "SELECT tool_arguments FROM transcript_steps WHERE kind = 'tool call' AND instance_id = 'hello-world' "
             "AND train_trial_index = 1 ORDER BY step_index") == [
        ('{"keys":["ls -la\\n"]}',), ('{"keys":["echo \\"Hello, world!\\" > hello.txt\\n"]}',)]
    # the screen the agent left is the output; the tests' own verdicts are the judges' notes
    output, notes = q(tmp_db, "SELECT output_text, judge_notes FROM predictions WHERE instance_id = 'hello-world' "
                      "AND train_trial_index = 2")[0]
    assert output == "root@c0ffee:/app# cat hello.txt\nHello, world! (3)\n"
    assert [(n["criterion"], n["score"]) for n in json.loads(notes)] == [
        ("test_hello_file_exists", "passed"), ("test_hello_file_content", "failed")]
    assert run.is_dir()


def test_the_cli_checks_the_accuracy_and_names_no_trial_file_as_unread(tmp_path):
    write_run(tmp_path / "runs")
    r = run_module("ingest", tmp_path / "runs", "--db", tmp_path / "t.duckdb", "--strict")
    assert r.returncode == 0, r.stderr
    assert "harness check: 1 of 1 runs agree with the harness's own headline" in r.stdout
    assert "ingested 1 runs, 6 predictions, 4 failures, 74 transcript steps (12 tool calls)" in r.stdout
    assert "skipped" not in r.stdout


def test_a_broken_trial_file_is_named_and_the_rest_loads(tmp_path, tmp_db):
    run = write_run(tmp_path / "runs")
    trial = run / "hello-world" / f"hello-world.3-of-3.{RUN_ID}"
    broken = trial / "results.json"
    broken.write_text(broken.read_text()[:200])  # cut off mid-write
    commands_file = run / "fix-permissions" / f"fix-permissions.2-of-3.{RUN_ID}" / "commands.txt"
    commands_file.write_text(commands_file.read_text() + "['ls', \n")
    summary = ingest_paths([tmp_path / "runs"], db=tmp_db)
    # every trial still loads with its verdict from the run's results.json, which the accuracy counts
    assert (summary.runs, summary.predictions, summary.failures) == (1, 6, 4)
    assert q(tmp_db, "SELECT harness_agrees FROM runs") == [(True,)]
    skipped = {path: reason for reason, paths in summary.skipped.items() for path in paths}
    assert sorted(skipped) == [str(commands_file), str(broken)]
    assert skipped[str(commands_file)] == (
        "a Terminal-Bench trial file that cannot be read (line 10: not the Python literal of the keys sent (a text or a "
        "list of texts)): its trial loads without it")
    assert skipped[str(broken)] == (
        "a Terminal-Bench trial file that cannot be read (line 5, column 20: invalid JSON: Unterminated string "
        "starting at): its trial loads without it")
    # the trial whose commands.txt is broken keeps its other steps: instruction, log, failure mode, tests
    assert q(tmp_db, "SELECT count(*) FROM transcript_steps WHERE instance_id = 'fix-permissions' "
             "AND train_trial_index = 1") == [(4,)]


def test_a_run_without_metadata_needs_model_and_dataset(tmp_path, tmp_db):
    write_run(tmp_path / "runs", metadata=False)
    r = run_module("ingest", tmp_path / "runs", "--db", tmp_path / "t.duckdb")
    assert r.returncode == 2
    assert "the Terminal-Bench run names no model (no model_name in run_metadata.json): pass --model NAME" in r.stdout + r.stderr
    summary = ingest_paths([tmp_path / "runs"], db=tmp_db, options=ReadOptions(model="m", dataset="terminal-bench-core"))
    assert (summary.runs, summary.predictions) == (1, 6)
    assert q(tmp_db, "SELECT model, dataset, harness_agrees FROM runs") == [("m", "terminal-bench-core", True)]
