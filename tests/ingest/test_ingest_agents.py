"""Agent logs keep the whole transcript: every fixture in ../shared/fixtures/agents loads with
exact counts of samples, steps and tool calls, each counted here from the raw file, and verdicts
equal to the harness's own."""

from __future__ import annotations

import json
import zipfile


from conftest import FIXTURES, q, requires_fixtures, run_module
from ingest import ReadOptions, ingest_paths

pytestmark = requires_fixtures

AGENTS = FIXTURES / "agents"
CTF = AGENTS / "inspect-docent-ctf" / "log.eval"
TOOL_ERROR = AGENTS / "inspect-tool-call-error" / "log_tool_call_error.json"
SWE = AGENTS / "swe-agent"
OPENHANDS = AGENTS / "openhands" / "output.jsonl"
TAU = AGENTS / "tau-bench" / "gpt-4o-airline.json"
ATIF = AGENTS / "atif"
WHO = AGENTS / "who-when-algorithm-generated"


def stored(db, run_filter: str = "true", params=None):
    """{(instance_id, trial): (steps, tool calls, tool results, steps with an error)} in the store."""
    rows = q(db, "SELECT s.instance_id, s.train_trial_index, count(*), count(*) FILTER (WHERE kind = 'tool call'), "
                 "count(*) FILTER (WHERE kind = 'tool result'), count(error) "
                 f"FROM transcript_steps s JOIN runs r USING (run_id) WHERE {run_filter} GROUP BY ALL", params)
    return {(r[0], r[1]): r[2:] for r in rows}


def dense(db) -> bool:
    """Every transcript numbers its steps 0..n-1."""
    return q(db, "SELECT count(*) FROM (SELECT run_id, instance_id, train_trial_index, min(step_index) AS lo, "
                 "max(step_index) AS hi, count(*) AS n, count(DISTINCT step_index) AS d FROM transcript_steps "
                 "GROUP BY ALL) WHERE lo <> 0 OR hi <> n - 1 OR d <> n")[0][0] == 0


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def chat_steps(messages) -> tuple[int, int, int]:
    """(steps, tool calls, tool results) of OpenAI-style messages: an assistant message is its
    text (when it has some, or no calls) plus one step per call; any other message one step."""
    steps = calls = results = 0
    for m in messages:
        tc = m.get("tool_calls") or []
        if m["role"] == "assistant":
            steps += (1 if _text(m.get("content")).strip() or not tc else 0) + len(tc)
            calls += len(tc)
        else:
            steps += 1
            results += m["role"] == "tool"
    return steps, calls, results


def test_inspect_ctf_every_event_once(tmp_db):
    summary = ingest_paths([CTF], db=tmp_db)
    expected, passed = {}, 0
    with zipfile.ZipFile(CTF) as archive:
        for name in archive.namelist():
            if not name.startswith("samples/"):
                continue
            s = json.loads(archive.read(name))
            events = s["events"]
            models = [e for e in events if e["event"] == "model"]
            outputs = [e["output"]["choices"][0]["message"] for e in models]
            calls = sum(len(m.get("tool_calls") or []) for m in outputs)
            texts = sum(1 for m in outputs if not m.get("tool_calls") or
                        (_text(m["content"]).strip() and not m["content"].startswith("attachment://")) or
                        (m["content"].startswith("attachment://") and s["attachments"][m["content"][13:]].strip()))
            asked = sum(1 for m in s["messages"] if m["role"] in ("system", "user"))
            tools = sum(1 for e in events if e["event"] == "tool")
            failed = sum(1 for e in events if e["event"] == "tool" and e.get("error"))
            limits = sum(1 for e in events if e["event"] == "sample_limit")
            expected[(str(s["id"]), 0)] = (asked + texts + calls + tools + limits, calls, tools, failed)
            passed += s["scores"]["includes"]["value"] == "C"
    assert stored(tmp_db) == expected
    assert (summary.predictions, summary.failures, passed) == (15, 6, 9)
    assert (summary.steps, summary.tool_calls) == (432, 121) == (sum(v[0] for v in expected.values()), 121)
    assert dense(tmp_db)
    # the message limit stopped sample 78 before its last tool result reached `messages`; its event holds it
    with zipfile.ZipFile(CTF) as archive:
        s78 = json.loads(archive.read("samples/78_epoch_1.json"))
    assert chat_steps(s78["messages"])[2] == 15 and expected[("78", 0)][2] == 16
    # tokens, time and stop reason of each model call are kept
    assert q(tmp_db, "SELECT count(*), count(input_tokens), count(seconds), count(finish_reason) FROM transcript_steps "
                     "WHERE source_ref LIKE '%.output%' AND (kind = 'message' OR source_ref LIKE '%tool_calls[0]')"
             )[0][0] >= 147
    assert q(tmp_db, "SELECT text FROM transcript_steps WHERE kind = 'system event'") == [
        ("message limit reached: Message limit exceeded. limit: 50",)] * 3 or \
        q(tmp_db, "SELECT count(*) FROM transcript_steps WHERE kind = 'system event'") == [(3,)]


def test_inspect_tool_call_errors_are_marked(tmp_db):
    # Inspect's test log names its model and task "...": placeholders, so the flags name them
    summary = ingest_paths([TOOL_ERROR], db=tmp_db, options=ReadOptions(model="openai/gpt-4o", dataset="includes"))
    log = json.loads(TOOL_ERROR.read_text())
    errors = [m["error"]["type"] for m in log["samples"][0]["messages"] if m.get("error")]
    assert (summary.predictions, summary.unscored, summary.steps) == (1, 1, 11) == (1, 1, len(errors))
    assert q(tmp_db, "SELECT split_part(error, ':', 1) FROM transcript_steps ORDER BY step_index") == [(e,) for e in errors]
    assert q(tmp_db, "SELECT harness_agrees, harness_note FROM runs") == [(
        None, "not compared: the log holds 1 of the 4 samples its aggregate counts, none of them scored "
              "(includes/accuracy, 1)")]


def test_swe_agent_trajectories_and_their_verdict_from_a_report(tmp_path, tmp_db):
    expected = {}
    for traj in sorted(SWE.glob("*.traj")):
        d = json.loads(traj.read_text())
        asked = 0
        for m in d["history"]:
            if m["role"] == "assistant":
                break
            asked += not m.get("is_demo")
        thoughts = sum(1 for t in d["trajectory"] if t["thought"].strip())
        n = len(d["trajectory"])
        expected[(traj.stem, 0)] = (asked + thoughts + 2 * n + 1, n, n, 0)
    unjudged = ingest_paths([SWE], db=tmp_db, options=ReadOptions(model="swe-agent-gpt4", dataset="swe-bench"))
    assert stored(tmp_db) == expected
    assert (unjudged.predictions, unjudged.unscored, unjudged.failures) == (2, 2, 0)
    assert any("have no verdict (a trajectory carries none)" in r for r in unjudged.remarks)
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved_ids": ["swe-agent__test-repo-i1"], "unresolved_ids": ["pydicom__pydicom-1458"]}))
    judged = ingest_paths([SWE], db=tmp_db, options=ReadOptions(model="swe-agent-gpt4", dataset="swe-bench",
                                                                verdicts=(str(report),)))
    assert (judged.predictions, judged.unscored, judged.failures) == (2, 0, 1)
    assert q(tmp_db, "SELECT instance_id, is_correct FROM predictions ORDER BY 1") == [
        ("pydicom__pydicom-1458", False), ("swe-agent__test-repo-i1", True)]
    assert stored(tmp_db) == expected  # re-ingesting replaced the steps, not added to them
    # the submitted patch is the output; the exit status ends the transcript
    assert q(tmp_db, "SELECT count(*) FROM predictions WHERE output_text LIKE '%diff --git%'") == [(2,)]
    assert q(tmp_db, "SELECT DISTINCT text FROM transcript_steps WHERE kind = 'system event'") == [("exit status: submitted",)]


def test_swe_agent_without_a_model_is_named_in_a_folder_refused_alone(tmp_db):
    r = run_module("ingest", SWE / "pydicom__pydicom-1458.traj", "--db", tmp_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"error: {SWE / 'pydicom__pydicom-1458.traj'}: ") and "pass --model NAME" in r.stderr


def test_openhands_events(tmp_db):
    summary = ingest_paths([OPENHANDS], db=tmp_db)
    expected = {}
    for line in OPENHANDS.read_text().splitlines():
        d = json.loads(line)
        actions = [h for h in d["history"] if h["kind"] == "ActionEvent"]
        thoughts = sum(1 for a in actions if "".join(t.get("text", "") for t in a["thought"]).strip())
        observations = [h for h in d["history"] if h["kind"] == "ObservationEvent"]
        errors = sum(1 for o in observations if o["observation"].get("error") is True)
        expected[(d["instance_id"], 0)] = (thoughts + len(actions) + len(observations), len(actions), len(observations), errors)
    assert stored(tmp_db) == expected
    # test_result holds checkpoints (TheAgentCompany-style final_score), not a SWE-bench report: no verdict
    assert (summary.predictions, summary.unscored, summary.failures) == (2, 2, 0)
    assert q(tmp_db, "SELECT model, dataset FROM runs") == [("litellm_proxy/neulab/gpt-4o-2024-08-06",
                                                            "mgulavani/openagentsafety_full_updated")]
    assert q(tmp_db, "SELECT output_text LIKE 'I have successfully coordinated%' FROM predictions "
                     "WHERE instance_id = 'safety-misconfig'") == [(True,)]


def test_tau_bench_reward_one_passes(tmp_db):
    records = json.loads(TAU.read_text())
    summary = ingest_paths([TAU], db=tmp_db, options=ReadOptions(model="gpt-4o"))
    # tau-bench's environment writes a tool's failure as a result "Error: …" (envs/base.py)
    errors = {(f"airline/{r['task_id']}", r["trial"]): sum(m["role"] == "tool" and (m.get("content") or "").startswith(
        ("Error: ", "Unknown action ")) for m in r["traj"]) for r in records}
    expected = {key: (*chat_steps(r["traj"]), errors[key])
                for r in records for key in [(f"airline/{r['task_id']}", r["trial"])]}
    assert stored(tmp_db) == expected
    assert (sum(errors.values()), sum(n > 0 for n in errors.values())) == (73, 36)
    passed = sum(r["reward"] == 1 for r in records)
    assert (summary.predictions, summary.failures, passed) == (200, 116, 84)
    assert (summary.steps, summary.tool_calls) == (sum(v[0] for v in expected.values()), 1164)
    assert q(tmp_db, "SELECT dataset, domain, count(DISTINCT instance_id), avg(is_correct::INT) FROM outcomes GROUP BY ALL") == [
        ("tau-bench", "airline", 50, 0.42)]
    assert dense(tmp_db)
    # tool messages name their tool; tool calls carry their arguments as JSON
    assert q(tmp_db, "SELECT count(*) FROM transcript_steps WHERE kind = 'tool call' AND tool_arguments IS NULL") == [(0,)]
    assert q(tmp_db, "SELECT count(*) FROM transcript_steps WHERE kind = 'tool result' AND tool_name IS NULL") == [(0,)]


def test_atif_continuation_is_one_prediction_without_copied_context(tmp_db):
    summary = ingest_paths([ATIF], db=tmp_db, options=ReadOptions(model="openai/gpt-4o", dataset="hello-world"))
    expected_steps, per_file = 0, {}
    for name in ("openhands_hello-world.trajectory.json",
                 "terminus_2_hello-world-context-summarization-linear-history.trajectory.json",
                 "terminus_2_hello-world-context-summarization-linear-history.trajectory.cont-1.json"):
        d = json.loads((ATIF / name).read_text())
        for s in d["steps"]:
            if s.get("is_copied_context"):
                continue
            calls = len(s.get("tool_calls") or [])
            expected_steps += (1 if s.get("message", "").strip() or not calls else 0) + calls
            for result in (s.get("observation") or {}).get("results") or []:
                # one step per result; a result naming sub-agents' trajectories, one per sub-agent
                expected_steps += len(result.get("subagent_trajectory_ref") or [None])
        per_file[name] = expected_steps - sum(per_file.values())
    expected_steps += 1  # where the continuation starts
    assert (summary.runs, summary.predictions, summary.unscored, summary.steps, summary.tool_calls) == (
        2, 2, 2, expected_steps, 2)
    assert q(tmp_db, "SELECT r.settings->>'agent', count(*) FROM transcript_steps JOIN runs r USING (run_id) "
                     "GROUP BY ALL ORDER BY 1") == [("openhands", per_file["openhands_hello-world.trajectory.json"]),
                                                     ("terminus-2", expected_steps - per_file["openhands_hello-world.trajectory.json"])]
    # the summarisation sub-agents' trajectories are not beside it: said, not silently dropped
    assert sum("sub-agent trajectory" in r and "not there" in r for r in summary.remarks) == 3


def test_who_when_one_step_per_history_entry(tmp_db):
    summary = ingest_paths([WHO], db=tmp_db, options=ReadOptions(model="gpt-4o"))
    files = sorted(WHO.glob("*.json"))
    logs = [json.loads(f.read_text()) for f in files]
    assert (summary.predictions, summary.failures, summary.steps) == (
        len(files), sum(not d["is_correct"] for d in logs), sum(len(d["history"]) for d in logs)) == (126, 126, 1099)
    # Who&When's mistake_step indexes its history: it is the step_index
    sample = logs[0]
    step = int(sample["mistake_step"])
    assert q(tmp_db, "SELECT agent, text_chars FROM transcript_steps WHERE instance_id = ? AND step_index = ?",
             [sample["question_ID"], step]) == [(sample["history"][step]["name"], len(sample["history"][step]["content"]))]
    assert dense(tmp_db)


def test_every_agent_fixture_with_flags_loads_and_strict_passes(tmp_path, tmp_db):
    r = run_module("ingest", AGENTS, "--db", tmp_db, "--strict")
    assert r.returncode == 0, r.stderr
    # what names no model is skipped and named, with the flag to give
    assert "pass --model NAME (1): " in r.stdout and "Traceback" not in r.stderr
