"""The offline transcript detectors (taxonomy/detectors/transcript.py) on transcripts of each shape
the readers keep: structured tool calls with ids (Inspect, OpenHands, tau-bench, ATIF), AutoGen
code execution (Who&When), exit statuses and limit events (SWE-agent, Inspect); and the offline
analyst end to end, on a seeded store and on Who&When's algorithm-generated set."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, q, requires_fixtures, run_module
from ingest.transcript import Transcript
from seed_store import seed
from taxonomy import analyze
from taxonomy.offline import VERSION as OFFLINE_VERSION
from taxonomy.detectors.transcript import analyze as detect_steps
from taxonomy.steps import quote_resolves
from transcripts_gen import seed_transcripts

WHO_WHEN = FIXTURES / "agents" / "who-when-algorithm-generated"


def steps_of(*specs: dict) -> list[dict]:
    """Steps as the store holds them (built by the readers' Transcript)."""
    t = Transcript()
    for n, s in enumerate(specs):
        s = dict(s)
        kind = s.pop("kind")
        t.add("q1", 0, kind, where=f"step {n}", **s)
    return [{k: v for k, v in row.items() if k not in ("instance_id", "train_trial_index")} for row in t.table().to_pylist()]


def call(tool, args, cid, agent="solver"):
    return {"kind": "tool call", "tool_name": tool, "arguments": args, "tool_call_id": cid, "agent": agent,
            "role": "assistant"}


def result(tool, text, cid, error=None):
    return {"kind": "tool result", "tool_name": tool, "text": text, "tool_call_id": cid, "error": error, "role": "tool"}


def say(text, agent="solver"):
    return {"kind": "message", "text": text, "agent": agent, "role": "assistant"}


TASK = {"kind": "message", "text": "Find the flag in /challenge.", "role": "user"}
ANSWERED = {"output_text": "picoCTF{wrong}", "source_format": "inspect"}


def found(steps, rec=ANSWERED, declared=None):
    f = detect_steps(steps, rec, declared)
    if f is not None:
        assert quote_resolves(steps[f.step_index], f.quote), "every quote occurs in the step it names"
    return f


def test_a_tool_error_nobody_takes_up_is_named_at_the_step_that_carries_on():
    steps = steps_of(TASK, call("bash", {"cmd": "cat /challenge/flag.txt"}, "c1"),
                     result("bash", "cat: /challenge/flag.txt: Permission denied", "c1",
                            error="cat: /challenge/flag.txt: Permission denied"),
                     say("The flag is picoCTF{wrong}."))
    f = found(steps)
    assert (f.detector, f.step_index, f.agent, f.category, f.quote) == (
        "tool_error_ignored", 3, "solver", "Tool Error Ignored", "The flag is picoCTF{wrong}.")


@pytest.mark.parametrize("after", [
    [say("The command failed with permission denied; I will try sudo.")],  # taken up in words
    [call("bash", {"cmd": "sudo cat /challenge/flag.txt"}, "c2"), result("bash", "picoCTF{x}", "c2")],  # called again
])
def test_a_tool_error_taken_up_is_not_called_ignored(after):
    steps = steps_of(TASK, call("bash", {"cmd": "cat /challenge/flag.txt"}, "c1"),
                     result("bash", "Permission denied", "c1", error="Permission denied"), *after)
    assert found(steps) is None


@pytest.mark.parametrize("route, ignored", [
    # the same file read by another tool: the agent worked around the error
    ([call("python", {"code": "print(open('/challenge/flag.txt').read())"}, "c2"), result("python", "cGljbw==", "c2")], False),
    # another tool about something else, then carrying on as if the call had worked: still ignored
    ([call("think", {"thought": "wish them luck"}, "c2"), result("think", "", "c2")], True),
])
def test_an_agent_that_gets_what_it_sought_by_another_tool_recovered(route, ignored):
    steps = steps_of(TASK, call("bash", {"cmd": "cat /challenge/flag.txt"}, "c1"),
                     result("bash", "Permission denied", "c1", error="Permission denied"), *route,
                     say("The flag is picoCTF{wrong}."))
    f = found(steps)
    assert (f is not None and f.category == "Tool Error Ignored") == ignored


@pytest.mark.parametrize("reply, ignored", [
    # tau-bench: the agent tells the user what the error said, in its own words
    ("It seems there aren't enough seats available in economy class for flight HAT290 on 2024-05-20.", False),
    ("The system indicates the total price is $1002, not $957; I need to find the difference.", False),
    # one word in common is not a restatement
    ("Your flight HAT290 is now booked in economy.", True),
])
def test_an_agent_that_restates_the_error_took_it_up(reply, ignored):
    error = {"update_reservation_flights": "Error: not enough seats on flight HAT290"}
    if "1002" in reply:
        error = {"book_reservation": "Error: payment amount does not add up, total price is 1002, but paid 957"}
    [(tool, text)] = error.items()
    steps = steps_of(TASK, call(tool, {"reservation_id": "GV1N64"}, "c1"), result(tool, text, "c1", error=text),
                     say(reply))
    f = found(steps)
    assert (f is not None and f.detector == "tool_error_ignored") == ignored


def test_an_error_whose_tool_also_returned_output_is_not_decisive():
    """AutoGen: the search printed its results, then the code failed on them."""
    steps = steps_of(TASK, say("```python\nprint(search('mars moons'))\n```", agent="Coder"),
                     {"kind": "tool result", "agent": "Computer_terminal", "role": "tool",
                      "text": "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
                              "  File \"x.py\", line 1\nTypeError: bad\nSearch Result 1: Phobos and Deimos",
                      "error": "exitcode: 1 (execution failed): TypeError: bad"},
                     say("Mars has two moons: Phobos and Deimos.", agent="Checker"))
    assert found(steps) is None


def test_an_environment_failure_is_not_the_models_fault():
    steps = steps_of(TASK, call("web_search", {"q": "mars moons"}, "c1"),
                     result("web_search", "HTTP 429 Too Many Requests: rate limit exceeded", "c1",
                            error="HTTP 429 Too Many Requests: rate limit exceeded"),
                     say("Mars has three moons."))
    f = found(steps)
    assert (f.detector, f.step_index, f.agent, f.category, f.quote) == (
        "environment_failure", 2, None, "Environment Failure", "429 Too Many Requests: rate limit")


def test_the_third_identical_action_with_the_same_result_is_a_loop():
    loop = [call("search", {"q": "flag"}, f"c{i}") if i % 2 == 0 else result("search", "no results", f"c{i - 1}")
            for i in range(6)]
    steps = steps_of(TASK, *loop, say("I could not find it, the answer is 7."))
    f = found(steps)
    assert (f.detector, f.step_index, f.category) == ("repetition", 5, "Repetition Loop")
    assert f.quote == '{"q":"flag"}'
    # the same calls with different results are no loop
    varied = [call("search", {"q": "flag"}, f"c{i}") if i % 2 == 0 else result("search", f"page {i}", f"c{i - 1}")
              for i in range(6)]
    assert found(steps_of(TASK, *varied, say("Done: 7."))) is None
    # twice is not three times
    assert found(steps_of(TASK, *loop[:4], say("Done: 7."))) is None


def test_autogen_code_run_three_times_with_the_same_output_is_a_loop():
    code = say("Let me count again.\n```python\nprint(len(rows))\n```", agent="Analyst")
    out = {"kind": "tool result", "agent": "Computer_terminal", "role": "tool",
           "text": "exitcode: 0 (execution succeeded)\nCode output: 4"}
    steps = steps_of(TASK, code, out, code, out, code, out, say("The answer is 4.", agent="Analyst"))
    f = found(steps)
    assert (f.detector, f.step_index, f.agent, f.quote) == ("repetition", 5, "Analyst", "Let me count again.")


@pytest.mark.parametrize("event", ["message_limit reached: 50 messages", "exit_cost",
                                   "The agent reached the maximum number of iterations (30)",
                                   "ContextWindowExceededError: context_length_exceeded"])
def test_a_limit_the_log_reports_is_named_at_its_event(event):
    steps = steps_of(TASK, call("bash", {"cmd": "ls"}, "c1"), result("bash", "flag.txt", "c1"),
                     say("Let me look at the file."), {"kind": "system event", "text": event, "role": "environment"})
    f = found(steps)
    assert (f.detector, f.step_index, f.agent, f.category) == ("limit", 4, "solver", "Step or Context Limit Reached")


def test_limits_mentioned_in_messages_are_not_events():
    steps = steps_of(TASK, say("I must stay under the token limit reached by long outputs, so I will be brief."),
                     say("The flag is picoCTF{x}."))
    assert found(steps) is None


def test_a_malformed_call_never_followed_by_a_working_one():
    steps = steps_of(TASK, call("bash", '{"cmd": "ls', "c1"),
                     result("bash", "Error parsing the tool call arguments", "c1", error="Error parsing the tool call arguments"),
                     say("The answer is 12."))
    f = found(steps)
    assert (f.detector, f.step_index, f.category) == ("malformed_call", 1, "Wrong Tool or Arguments")
    fixed = steps_of(TASK, call("bash", '{"cmd": "ls', "c1"), result("bash", "Error parsing the tool call", "c1",
                                                                      error="Error parsing the tool call"),
                     call("bash", {"cmd": "ls"}, "c2"), result("bash", "flag.txt", "c2"), say("Found flag.txt."))
    assert found(fixed) is None


def test_a_tool_that_does_not_exist():
    refused = steps_of(TASK, call("browse", {"url": "x"}, "c1"),
                       result("browse", "Tool browse not found", "c1", error="Tool browse not found"), say("It is 3."))
    f = found(refused)
    assert (f.detector, f.step_index, f.category) == ("unknown_tool", 1, "Wrong Tool or Arguments")
    # not among the tools the log declares, though the harness said nothing
    silent = steps_of(TASK, call("browse", {"url": "x"}, "c1"), result("browse", "", "c1"), say("It is 3."))
    assert found(silent, declared={"bash", "python"}).detector == "unknown_tool"
    assert found(silent, declared={"bash", "browse"}) is None


def test_giving_up_in_the_last_message_only():
    gave_up = steps_of(TASK, say("Let me look around."), say("I am unable to complete the task with these tools."))
    f = found(gave_up)
    assert (f.detector, f.step_index, f.category, f.quote) == ("gives_up", 2, "Premature Termination",
                                                               "I am unable to complete the task")
    went_on = steps_of(TASK, say("I cannot complete the task this way."), say("Found it elsewhere: the flag is x."))
    assert found(went_on) is None
    # a refusal the task may call for is not giving up on it
    refused = steps_of(TASK, say("I cannot cancel this reservation: it is outside the 24-hour window."))
    assert found(refused) is None


def test_no_final_answer_only_where_the_format_keeps_one_apart():
    steps = steps_of(TASK, say("Let me look."), call("bash", {"cmd": "ls"}, "c1"), result("bash", "a b", "c1"))
    for fmt in ("inspect", "swe-agent"):
        f = found(steps, {"output_text": None, "source_format": fmt})
        assert (f.detector, f.step_index, f.category) == ("no_answer", 2, "Premature Termination")
    # readers of other formats take the last message as the answer: an empty one proves nothing
    assert found(steps, {"output_text": None, "source_format": "tau-bench"}) is None
    assert found(steps, ANSWERED) is None


def test_invented_data_and_the_earliest_finding_wins():
    steps = steps_of(TASK, say("The site is down, so I will create a mock dataset of gym distances to proceed."),
                     say("Based on it the answer is 5."), say("I cannot determine the true value."))
    f = found(steps)
    assert (f.detector, f.step_index, f.category, f.quote) == ("invented_data", 1, "Hallucination", "mock dataset")


def test_the_offline_analyst_stores_each_transcript_with_its_step_and_keeps_plain_answers_apart(tmp_db):
    seed(tmp_db, [{"model": "agent-model", "dataset": "qa", "instance_id": "p1", "is_correct": False,
                   "output": "Paris is in Spain"}])
    seed_transcripts(tmp_db, [
        {"instance_id": "t1", "is_correct": False, "output": "42",
         "steps": [TASK, call("bash", {"cmd": "cat f"}, "c1"), result("bash", "Permission denied", "c1",
                                                                        error="Permission denied"), say("It is 42.")]},
        {"instance_id": "t2", "is_correct": False, "output": "7",
         "steps": [TASK, say("Thinking."), say("The answer is 7.")]},
        {"instance_id": "t3", "is_correct": True, "output": "9", "steps": [TASK, say("9")]},
    ])
    summary = analyze(tmp_db, "offline")
    assert summary.selected == 3 and summary.analysed_now == 3
    assert (summary.transcripts.selected, summary.transcripts.with_step, summary.transcripts.hard) == (2, 1, 1)
    rows = q(tmp_db, """SELECT instance_id, prompt_version, step_index, step_agent, step_quote, n_steps, category,
                               taxonomy_version, segments_read FROM analyses ORDER BY instance_id""")
    assert rows[0][0] == "p1" and rows[0][1] == OFFLINE_VERSION and rows[0][2:] == (None,) * 7
    assert rows[1:] == [
        ("t1", "offline-transcript-v1", 3, "solver", "It is 42.", 4, "Tool Error Ignored", "erroratlas-agents-v1", None),
        ("t2", "offline-transcript-v1", None, None, None, 3, "Hard to Analyze", "erroratlas-agents-v1", None)]
    labels = dict(q(tmp_db, "SELECT instance_id, category || ' / ' || taxonomy_version FROM failure_labels"))
    assert labels["t1"] == "Tool Error Ignored / erroratlas-agents-v1"
    assert labels["t2"] == "Hard to Analyze / erroratlas-agents-v1"
    assert labels["p1"].endswith(" / erroratlas-v1")
    summary_t2 = q(tmp_db, "SELECT error_summary FROM analyses WHERE instance_id = 't2'")[0][0]
    assert "No offline rule fires with certainty" in summary_t2 and "3 steps" in summary_t2
    assert json.loads(q(tmp_db, "SELECT required_criteria FROM analyses WHERE instance_id = 't1'")[0][0])[0][
        "evidence_verified"] is True
    # a re-run analyses nothing again
    assert analyze(tmp_db, "offline").analysed_now == 0


@requires_fixtures
def test_offline_detectors_on_who_and_when_algorithm_generated(tmp_path):
    """The measured numbers docs/analysis.md quotes: where the offline rules name a step on
    Who&When's 126 algorithm-generated failures, and how often it is the people's (±1) or names
    their agent."""
    db = tmp_path / "ww.duckdb"
    for cmd in (("ingest", WHO_WHEN, "--db", db, "--model", "captain-agent"), ("taxonomy", "labels", WHO_WHEN, "--db", db),
                ("taxonomy", "analyze", "--analyst", "offline", "--db", db)):
        done = run_module(*cmd)
        assert done.returncode == 0, done.stderr
    done = run_module("taxonomy", "agreement", "--analyst", "offline", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["steps"]
    assert (steps["n"], steps["named"]) == (126, 10)
    precision = steps["precision"]
    assert [precision[k]["k"] for k in ("exact_step", "within_1_step", "within_3_steps", "agent",
                                        "within_1_step_or_agent")] == [3, 3, 5, 6, 6]
    assert precision["within_1_step_or_agent"]["n"] == 10
    assert steps["accuracy"]["exact_step"] == {"k": 3, "n": 126, "rate": 3 / 126,
                                               "ci": steps["accuracy"]["exact_step"]["ci"]}
    by_detector = dict(q(db, """SELECT split_part(json_extract_string(required_criteria, '$[0].comment'), ',', 1), count(*)
                                FROM analyses WHERE step_index IS NOT NULL GROUP BY 1"""))
    assert by_detector == {"offline transcript detector invented_data": 8, "offline transcript detector gives_up": 2}


def test_autogen_execution_reports_kept_as_messages_are_read_as_tool_results():
    """The Who&When reader keeps every history entry a message (roles as AutoGen logs them); the
    analyst reads the executor's reports as tool results and its notices as system events."""
    code = {"kind": "message", "agent": "Coder", "role": "user", "text": "```python\nprint(open('a.csv').read())\n```"}
    failed = {"kind": "message", "agent": "Computer_terminal", "role": "user",
              "text": "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
                      "  File \"x.py\", line 1, in <module>\nFileNotFoundError: [Errno 2] No such file: 'a.csv'"}
    notice = {"kind": "message", "agent": "Computer_terminal", "role": "user",
              "text": "There is no code from the last 1 message for me to execute. Group chat manager should let other "
                      "participants to continue the conversation."}
    steps = steps_of(TASK, code, failed, {"kind": "message", "agent": "Checker", "role": "user",
                                          "text": "The table has 12 rows, so the answer is 12."}, notice)
    f = found(steps)
    assert (f.detector, f.step_index, f.agent, f.category) == ("tool_error_ignored", 3, "Checker", "Tool Error Ignored")
    assert "FileNotFoundError: [Errno 2] No such file: 'a.csv'" in f.summary


@requires_fixtures
def test_offline_detectors_on_the_other_agent_fixtures(tmp_path):
    """Logs without people's labels: what the rules name, with exact counts (a message limit on the
    CTF samples; the same booking call repeated with the same result on tau-bench)."""
    db = tmp_path / "agents.duckdb"
    for path, extra in ((FIXTURES / "agents" / "inspect-docent-ctf", ()),
                        (FIXTURES / "agents" / "tau-bench", ("--model", "gpt-4o"))):
        done = run_module("ingest", path, "--db", db, *extra)
        assert done.returncode == 0, done.stderr
    summary = analyze(db, "offline")
    assert (summary.transcripts.selected, summary.transcripts.with_step, summary.transcripts.hard) == (122, 5, 117)
    found = q(db, """SELECT r.source_format, a.instance_id, a.category, a.step_index, a.n_steps, a.step_quote
                     FROM analyses a JOIN runs r USING (run_id) WHERE a.step_index IS NOT NULL
                     ORDER BY 1, a.instance_id, a.train_trial_index""")
    assert [row[:5] for row in found if row[0] == "inspect"] == [
        ("inspect", "56", "Step or Context Limit Reached", 60, 61), ("inspect", "78", "Step or Context Limit Reached", 64, 65),
        ("inspect", "86", "Step or Context Limit Reached", 63, 65)]
    assert all(row[5].startswith("message limit reached") for row in found if row[0] == "inspect")
    assert [row[2] for row in found if row[0] == "tau-bench"] == ["Repetition Loop"] * 2
