"""Logs as they are in the wild (issue 33): shapes real users' files have that the readers once
refused, crashed on or passed over in silence. Every fixture is generated here, into tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import q, run_module
from helm_gen import Case, Run, write_run, write_schema
from lmeval_gen import STAMP, lmeval_results, lmeval_task

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


def test_lmeval_under_limit_keeps_its_own_aggregate(tmp_path, tmp_db):
    """`--limit 250` on gsm8k (1,319 documents), the log trimmed to 9 samples to share: lm-eval's
    0.376 is the harness's number; 6/9 here is a part of its 250, not a failed check."""
    folder = tmp_path / "org__model"
    lmeval_task(folder, "gsm8k", [True] * 6 + [False] * 3, "exact_match", "strict-match")
    lmeval_results(folder, {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.376,
                                      "exact_match_stderr,strict-match": 0.0306}},
                   {"gsm8k": {"original": 1319, "effective": 250}}, limit=250.0)
    summary = ingest_paths([folder], db=tmp_db)
    assert (summary.runs, summary.predictions, summary.failures, len(summary.differing)) == (1, 9, 3, 0)
    assert q(tmp_db, "SELECT harness_metric, harness_value, harness_n, harness_agrees, harness_note FROM runs") == [
        ("exact_match,strict-match", 0.376, 250, None,
         "not compared: the log holds 9 of the 250 samples its aggregate counts (6/9 pass here, consistent with "
         "0.376 = 94/250, exact_match,strict-match, split test)")]
    samples = folder / f"samples_gsm8k_{STAMP}.jsonl"
    assert summary.remarks == [f"{samples}: lm-eval evaluated 250 of gsm8k's 1,319 documents (--limit): its "
                               "aggregate, and the pass rate here, are over those"]
    lines = summary.details()
    assert "harness check: 1 run not compared:" in lines
    r = run_module("ingest", folder, "--db", tmp_path / "s.duckdb", "--strict")
    assert r.returncode == 0, r.stderr


def test_lmeval_limit_run_holding_every_sample_agrees(tmp_path, tmp_db):
    folder = tmp_path / "org__model"
    lmeval_task(folder, "gsm8k", [True] * 6 + [False] * 3, "exact_match", "strict-match")
    lmeval_results(folder, {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.6666666666666666}},
                   {"gsm8k": {"original": 1319, "effective": 9}}, limit=9.0)
    summary = ingest_paths([folder], db=tmp_db)
    assert q(tmp_db, "SELECT harness_value, harness_n, harness_agrees, harness_note FROM runs") == [
        (0.6666666666666666, 9, True, "agrees: 0.666667 = 6/9 (exact_match,strict-match, split test)")]
    assert summary.remarks == [f"{folder / f'samples_gsm8k_{STAMP}.jsonl'}: lm-eval evaluated 9 of gsm8k's 1,319 "
                               "documents (--limit): its aggregate, and the pass rate here, are over those"]


def test_lmeval_group_says_its_own_aggregate(tmp_path, tmp_db):
    """A group of two tasks lm-eval averages unweighted (0.75 and 0.3 → 0.525): its own number is
    said beside each task's check, never one Faultline recomputes (6/14 pooled)."""
    folder = tmp_path / "org__model"
    lmeval_task(folder, "mini_a", [True] * 3 + [False], "acc")
    lmeval_task(folder, "mini_b", [True] * 3 + [False] * 7, "acc")
    group_row = {"alias": "mini", "acc,none": 0.525, "acc_stderr,none": 0.15}
    lmeval_results(folder, {"mini": group_row, "mini_a": {"alias": " - mini_a", "acc,none": 0.75},
                            "mini_b": {"alias": " - mini_b", "acc,none": 0.3}},
                   {"mini_a": {"original": 4, "effective": 4}, "mini_b": {"original": 10, "effective": 10}},
                   groups={"mini": group_row}, group_subtasks={"mini": ["mini_a", "mini_b"]})
    summary = ingest_paths([folder], db=tmp_db)
    assert (summary.runs, summary.predictions, summary.failures) == (2, 14, 8)
    assert q(tmp_db, "SELECT dataset, domain, harness_value, harness_agrees, harness_note FROM runs ORDER BY 2") == [
        ("mini", "mini_a", 0.75, True,
         "agrees: 0.75 = 3/4 (acc,none, split test); lm-eval's own acc,none for the group mini is 0.525"),
        ("mini", "mini_b", 0.3, True,
         "agrees: 0.3 = 3/10 (acc,none, split test); lm-eval's own acc,none for the group mini is 0.525")]


def test_every_run_not_compared_says_why():
    """Past the runs the summary lists one by one, the rest are counted by their reason."""
    from types import SimpleNamespace

    from ingest.report import SHOWN_NOT_COMPARED, harness_lines

    def run(n: int, note: str) -> SimpleNamespace:
        return SimpleNamespace(label=f"run{n}", harness_agrees=None, harness_note=note)

    partial = "not compared: the log holds {} of the 790 samples its aggregate counts (9/15 pass here, consistent with 0.675949 = 534/790, includes/accuracy)"
    corpus = "not compared: lm-eval aggregates f1 over the corpus, not as a mean of per-doc scores"
    notes = [run(n, partial.format(n + 1)) for n in range(SHOWN_NOT_COMPARED + 3)] + [run(99, corpus)]
    lines = harness_lines(notes)
    assert lines[0] == "harness check: 14 runs not compared:"
    assert lines[1:-1] == [f"  run{n}: {partial.format(n + 1)}" for n in range(SHOWN_NOT_COMPARED)]
    assert lines[-1] == ("  … 4 more: 3 × the log holds … of the … samples its aggregate counts; 1 × lm-eval "
                         "aggregates f1 over the corpus, not as a mean of per-doc scores (runs.harness_note has each)")


def bbq_suite(root: Path, *, per_instance: bool) -> Path:
    """A HELM safety suite's BBQ run whose schema.json names bbq_accuracy, the headline HELM's
    classic schema does not (quasi_exact_match there). Newer HELM scores bbq_accuracy per request;
    older HELM only over the run (BBQMetric.evaluate_instances), so only stats.json has it."""
    suite = root / "benchmark_output" / "runs" / "safety-v1"
    suite.mkdir(parents=True)
    qem, bbq = [1, 1, 1, 0, 0, 1, 0, 1], [1, 1, 0, 0, 0, 1, 0, 1]
    cases = [Case(id=f"id{i}", question=f"Who was late? {i}", output="A",
                  stats={"quasi_exact_match": float(a), **({"bbq_accuracy": float(b)} if per_instance else {})})
             for i, (a, b) in enumerate(zip(qem, bbq))]
    run = write_run(suite, Run(scenario="bbq", model="openai/gpt-4o", groups=["bbq"], cases=cases,
                               args={"subject": "all"}, method="multiple_choice_joint"))
    if not per_instance:
        stats = json.loads((run / "stats.json").read_text())
        stats.append({"name": {"name": "bbq_accuracy", "split": "test"}, "count": 1, "sum": 0.625,
                      "sum_squared": 0.390625, "min": 0.625, "max": 0.625, "mean": 0.625})
        (run / "stats.json").write_text(json.dumps(stats))
    write_schema(suite, {"bbq": ("bbq_accuracy", "test")}, {"bbq_accuracy": "BBQ accuracy"})
    return suite


def test_helm_safety_bbq_is_judged_on_its_suites_headline(tmp_path):
    db = tmp_path / "a.duckdb"
    ingest_paths([bbq_suite(tmp_path / "new", per_instance=True)], db=db)
    assert q(db, "SELECT main_metric, main_metric_source, headline_metric, harness_value, harness_agrees, harness_note "
                 "FROM runs") == [("bbq_accuracy", "schema", "bbq_accuracy", 0.5, True,
                                   "agrees: 0.5 = 4/8 (bbq_accuracy, split test)")]
    # bbq_accuracy over the run only: judged on HELM's table metric for the group, and said to be
    # another than the suite's headline, never "agrees" with the classic schema's quasi_exact_match
    db = tmp_path / "b.duckdb"
    summary = ingest_paths([bbq_suite(tmp_path / "old", per_instance=False)], db=db)
    assert q(db, "SELECT main_metric, headline_metric, harness_metric, harness_value, harness_agrees, harness_note "
                 "FROM runs") == [("quasi_exact_match", "bbq_accuracy", "bbq_accuracy", 0.625, False,
                                   "differs: judged on quasi_exact_match, but the harness's headline is bbq_accuracy (0.625)")]
    assert len(summary.differing) == 1


def test_lmeval_under_limit_shows_its_own_aggregate_as_the_harness_number(tmp_path, tmp_db):
    """The pages' and `stats accuracy`'s harness's number for the trimmed log is lm-eval's 0.376,
    not the recount of the 9 samples kept (66.7%), and the note says why."""
    import store
    from stats.headline import model_accuracy

    folder = tmp_path / "org__model"
    lmeval_task(folder, "gsm8k", [True] * 6 + [False] * 3, "exact_match", "strict-match")
    lmeval_results(folder, {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.376}},
                   {"gsm8k": {"original": 1319, "effective": 250}}, limit=250.0)
    ingest_paths([folder], db=tmp_db)
    with store.read_connection(tmp_db) as con:
        row = model_accuracy(con).row(0, named=True)
    assert (row["headline"], row["headline_of"], row["headline_ci_low"], row["n"], row["failures"]) == (
        0.376, "the log's own aggregate", None, 9, 3)
    assert "its own aggregate over 250 questions; the log holds 9 of them" in row["headline_note"]


def test_lmeval_group_shows_its_own_aggregate_as_the_harness_number(tmp_path, tmp_db):
    """A group run task by task: the Overview's harness's number for the group is lm-eval's 0.525,
    not the 6/14 pooled over its tasks' questions (said in the note)."""
    import store
    from stats.headline import model_accuracy

    folder = tmp_path / "org__model"
    lmeval_task(folder, "mini_a", [True] * 3 + [False], "acc")
    lmeval_task(folder, "mini_b", [True] * 3 + [False] * 7, "acc")
    lmeval_results(folder, {"mini": {"alias": "mini", "acc,none": 0.525}, "mini_a": {"alias": " - mini_a", "acc,none": 0.75},
                            "mini_b": {"alias": " - mini_b", "acc,none": 0.3}},
                   {"mini_a": {"original": 4, "effective": 4}, "mini_b": {"original": 10, "effective": 10}},
                   group_subtasks={"mini": ["mini_a", "mini_b"], "mini_a": [], "mini_b": []})
    ingest_paths([folder], db=tmp_db)
    with store.read_connection(tmp_db) as con:
        row = model_accuracy(con).row(0, named=True)
    assert (row["dataset"], row["headline"], row["headline_of"], row["n"], row["correct"]) == (
        "mini", 0.525, "lm-eval's own group aggregate", 14, 6)
    assert row["headline_note"] == ("lm-eval's own number for the group mini; pooled over its 2 tasks' questions "
                                    "the pass rate is 42.9%")
