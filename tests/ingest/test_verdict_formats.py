"""Verdicts and harness checks on every log the other formats produce: Inspect format version 1,
Inspect headers on 0–100, R-written Inspect logs, an EEE aggregate with several results, a
promptfoo run where every test errored, lm-eval multiple-choice references, and custom tables
as Parquet and Excel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import q, run_module
from ingest import IngestError, ingest_paths
from ingest.sources.promptfoo import short_label


def _inspect_v1(values: list[str], accuracy: float) -> dict:
    """An EvalLog as inspect_ai 0.3.9 wrote it: one scorer, `sample.score`, `results.metrics`."""
    return {
        "version": 1, "status": "success",
        "eval": {"task": "arith", "task_version": 0, "task_id": "t1", "run_id": "r1", "created": "2024-05-01T10:00:00",
                 "dataset": {"name": "arith"}, "model": "openai/gpt-4", "config": {}},
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}]},
        "results": {"scorer": {"name": "match", "params": {}},
                    "metrics": {"accuracy": {"name": "accuracy", "value": accuracy}, "bootstrap_std": {"name": "bootstrap_std", "value": 0.2}}},
        "stats": {"started_at": "2024-05-01T10:00:00", "completed_at": "2024-05-01T10:01:00", "model_usage": {}},
        "samples": [
            {"id": n + 1, "epoch": 1, "input": f"What is {n} + {n}?", "target": str(2 * n),
             "messages": [{"role": "user", "content": f"What is {n} + {n}?", "source": "input"}],
             "output": {"model": "gpt-4", "choices": [{"message": {"role": "assistant", "content": str(2 * n) if v == "C" else "7"},
                                                       "stop_reason": "stop"}]},
             "score": {"value": v, "answer": str(2 * n) if v == "C" else "7"}, "metadata": {}}
            for n, v in enumerate(values)
        ],
    }


def test_inspect_format_version_1_is_scored_and_checked(tmp_path, tmp_db):
    log = tmp_path / "2024-05-01T10-00-00_arith_t1.json"
    log.write_text(json.dumps(_inspect_v1(["C", "I", "C", "C"], 0.75)))
    summary = ingest_paths([log], db=tmp_db)
    assert q(tmp_db, "SELECT p.instance_id, p.score, p.is_correct, p.mapped_output FROM predictions p ORDER BY 1") == [
        ("1", 1.0, True, "0"), ("2", 0.0, False, "7"), ("3", 1.0, True, "4"), ("4", 1.0, True, "6"),
    ]
    assert q(tmp_db, "SELECT main_metric, scale_source, harness_agrees, harness_note FROM runs") == [
        ("match", "binary", True, "agrees: 0.75 = 3/4 (match/accuracy)"),
    ]
    assert (f"{log}: Inspect log format version 1 (inspect_ai 0.3.9 or older): sample.score and results.metrics "
            "read as version 2's scores") in summary.remarks


def _inspect_v2(task: str, values: list, accuracy: float, **header) -> dict:
    return {
        "version": 2, "status": "success",
        "eval": {"task": task, "task_id": f"{task}-id", "run_id": "r", "model": "m/one"},
        "results": {"total_samples": len(values), "completed_samples": len(values),
                    "scores": [{"name": "grader", "scorer": "grader", "metrics": {"accuracy": {"name": "accuracy", "value": accuracy}}}]},
        "samples": [{"id": n, "epoch": 1, "input": "q", "target": "a", "output": {"completion": "a"},
                     "scores": {"grader": {"value": v}}} for n, v in enumerate(values)],
        **header,
    }


def test_inspect_header_on_0_to_100_is_recognised_and_a_real_difference_still_shown(tmp_path, tmp_db):
    (tmp_path / "pct.json").write_text(json.dumps(_inspect_v2("pct", [1, 0, 1, 1], 75.0)))
    (tmp_path / "off.json").write_text(json.dumps(_inspect_v2("off", [1, 0, 1, 1], 70.0)))
    (tmp_path / "unit.json").write_text(json.dumps(_inspect_v2("unit", [1, 0, 0, 1], 0.5)))
    summary = ingest_paths([tmp_path], db=tmp_db)
    assert q(tmp_db, "SELECT dataset, harness_agrees, harness_note FROM runs ORDER BY 1") == [
        ("off", False, "differs by 5 points on 0–100: 0.75 = 3/4 here, the log says 70 (grader/accuracy)"),
        ("pct", True, "agrees: 0.75 = 3/4 (grader/accuracy, which the log reports on 0–100 as 75)"),
        ("unit", True, "agrees: 0.5 = 2/4 (grader/accuracy)"),
    ]
    assert summary.details()[:2] == [
        "harness check: 2 of 3 runs agree with the harness's own headline",
        "  off:m/one: differs by 5 points on 0–100: 0.75 = 3/4 here, the log says 70 (grader/accuracy)",
    ]
    # the log's accuracy metric is the scorer's evidence of a 0–1 scale
    assert q(tmp_db, "SELECT DISTINCT scale_source FROM runs") == [("inspect accuracy",)]


def _boxed(value):
    """What R's jsonlite writes for a scalar without auto_unbox: a one-element array."""
    return [value]


def test_inspect_log_written_by_r_with_boxed_scalars_is_read(tmp_path, tmp_db):
    log = _inspect_v2("boxed", ["C", "I"], 0.5)
    log["version"], log["status"] = _boxed(2), _boxed("success")
    for key in ("task", "task_id", "run_id", "model"):
        log["eval"][key] = _boxed(log["eval"][key])
    log["results"]["scores"][0]["name"] = _boxed("grader")
    log["results"]["scores"][0]["metrics"]["accuracy"]["value"] = _boxed(0.5)
    for sample in log["samples"]:
        sample["id"], sample["epoch"] = _boxed(sample["id"]), _boxed(1)
        sample["input"] = _boxed(sample["input"])
        sample["scores"]["grader"]["value"] = _boxed(sample["scores"]["grader"]["value"])
    path = tmp_path / "boxed.json"
    path.write_text(json.dumps(log))
    summary = ingest_paths([path], db=tmp_db)
    assert q(tmp_db, "SELECT model, dataset, status, harness_agrees FROM runs") == [("m/one", "boxed", "complete", True)]
    assert q(tmp_db, "SELECT instance_id, score, is_correct FROM outcomes ORDER BY 1") == [("0", 1.0, True), ("1", 0.0, False)]
    assert any(r.endswith("16 value(s) written as one-element lists (an R writer's JSON) read as the values they hold") for r in summary.remarks)
    # a list of several values where Inspect writes one is refused, naming the field
    log["eval"]["model"] = ["m/one", "m/two"]
    path.write_text(json.dumps(log))
    with pytest.raises(IngestError, match=r"boxed.json: eval.model: a list of 2 values where Inspect writes one \(\['m/one', 'm/two'\]\)"):
        ingest_paths([path], db=tmp_db)


def test_eee_aggregate_with_several_results_is_checked_against_the_verdicts_metric(tmp_path, tmp_db):
    results = [
        {"evaluation_name": "ner", "metric_config": {"metric_id": "f1_micro", "metric_kind": "f1", "lower_is_better": False,
                                                     "score_type": "continuous", "min_score": 0, "max_score": 1},
         "score_details": {"score": 0.81}},
        {"evaluation_name": "ner", "metric_config": {"metric_id": "f1_macro", "metric_kind": "f1", "lower_is_better": False,
                                                     "score_type": "continuous", "min_score": 0, "max_score": 1},
         "score_details": {"score": 0.64}},
        {"evaluation_name": "ner", "metric_config": {"metric_id": "exact_match", "metric_kind": "accuracy", "lower_is_better": False,
                                                     "score_type": "binary"},
         "score_details": {"score": 0.5, "uncertainty": {"num_samples": 4}}},
    ]
    aggregate = {"schema_version": "0.3.0", "evaluation_id": "ev/1", "model_info": {"id": "org/m"},
                 "evaluation_results": results, "detailed_evaluation_results": {"file_path": "x_samples.jsonl", "total_rows": 4}}
    (tmp_path / "x.json").write_text(json.dumps(aggregate))
    rows = [{"schema_version": "0.3.0", "evaluation_id": "ev/1", "model_id": "org/m", "evaluation_name": "ner",
             "sample_id": str(n), "input": {"raw": f"s{n}", "reference": ["B-PER"]}, "output": {"raw": ["B-PER" if ok else "O"]},
             "evaluation": {"score": 1.0 if ok else 0.0, "is_correct": ok}}
            for n, ok in enumerate([True, False, True, False])]
    (tmp_path / "x_samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ingest_paths([tmp_path / "x.json"], db=tmp_db)
    assert q(tmp_db, "SELECT harness_metric, harness_value, harness_n, harness_agrees, harness_note FROM runs") == [(
        "exact_match", 0.5, 4, True,
        "agrees: 0.5 = 2/4 (exact_match); the aggregate has 3 results for ner (f1_micro, f1_macro, exact_match): "
        "compared with exact_match, a pass rate, as the records' is_correct verdicts are",
    )]


def _promptfoo(results: list[dict], prompts: list[dict]) -> dict:
    return {"evalId": "eval-1", "results": {"version": 3, "results": results, "prompts": prompts},
            "config": {"description": "riddles"}}


def test_promptfoo_run_where_every_test_errored_is_not_compared_and_strict_passes(tmp_path, tmp_db):
    label = "You are a careful assistant.\n" + "Answer the riddle below in one word, then explain. " * 40 + "{{riddle}}"
    results = [{"provider": {"id": provider}, "promptIdx": 0, "prompt": {"raw": "riddle", "label": label}, "testIdx": n,
                "success": False, "score": 0, "failureReason": 2, "error": "API error: 401 unauthorized",
                "response": None, "testCase": {"vars": {"riddle": f"r{n}"}}}
               for provider in ("openai:gpt-x", "openai:gpt-y") for n in range(2)]
    prompts = [{"label": label, "provider": provider, "metrics": {"testPassCount": 0, "testFailCount": 0, "testErrorCount": 2}}
               for provider in ("openai:gpt-x", "openai:gpt-y")]
    # a second prompt for gpt-y, answered: its run needs the label to tell it apart
    results += [{"provider": {"id": "openai:gpt-y"}, "promptIdx": 1, "prompt": {"raw": "riddle", "label": "Solve: {{riddle}}"},
                 "testIdx": n, "success": n == 0, "score": 1 - n, "response": {"output": "echo"}, "testCase": {"vars": {}}}
                for n in range(2)]
    prompts.append({"label": "Solve: {{riddle}}", "provider": "openai:gpt-y", "metrics": {"testPassCount": 1, "testFailCount": 1, "testErrorCount": 0}})
    export = tmp_path / "export.json"
    export.write_text(json.dumps(_promptfoo(results, prompts)))
    r = run_module("ingest", export, "--db", tmp_db, "--strict")
    assert r.returncode == 0, r.stdout + r.stderr
    short = short_label(label)
    assert short == "You are a careful assistant.… #" + __import__("hashlib").sha1(label.encode()).hexdigest()[:8]
    assert q(tmp_db, "SELECT run_name, variant, harness_agrees, harness_note FROM runs ORDER BY 1") == [
        ("eval-1:openai:gpt-x", None, None, "not compared: every prediction errored (2 tests)"),
        ("eval-1:openai:gpt-y:Solve: {{riddle}}", "prompt=Solve: {{riddle}}", True,
         "agrees: 0.5 = 1/2 (testPassCount/(testPassCount+testFailCount))"),
        (f"eval-1:openai:gpt-y:{short}", f"prompt={short}", None, "not compared: every prediction errored (2 tests)"),
    ]
    assert max(len(line) for line in r.stdout.splitlines()) < 300


def test_lmeval_multiple_choice_references_are_option_texts(tmp_path, tmp_db):
    folder = tmp_path / "m"
    folder.mkdir()
    options = ["Paris", "Lyon", "Nice", "Lille"]
    rows = [{"doc_id": n, "doc": {"question": f"Capital {n}?", "choices": options, "answer": 0},
             "target": "0", "arguments": {"gen_args_0": {"arg_0": f"Capital {n}?\nA. Paris\nB. Lyon\nC. Nice\nD. Lille\nAnswer:",
                                                          "arg_1": {"until": ["\n"]}}},
             "resps": [[f" {letter}"]], "filtered_resps": [letter], "filter": "none", "metrics": ["exact_match"],
             "exact_match": float(letter == "A")}
            for n, letter in enumerate(["A", "D"])]
    stamp = "2025-01-02T03-04-05.678901"
    (folder / f"samples_capitals_{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / f"results_{stamp}.json").write_text(json.dumps({
        "model_name": "m", "results": {"capitals": {"exact_match,none": 0.5}},
        "configs": {"capitals": {"doc_to_choice": ["A", "B", "C", "D"], "test_split": "test"}}}))
    ingest_paths([folder], db=tmp_db)
    refs, choices = q(tmp_db, "SELECT refs, choices FROM instances WHERE instance_id = '1'")[0]
    assert json.loads(refs) == [{"text": "Paris", "correct": True}, {"text": "Lyon", "correct": False},
                                {"text": "Nice", "correct": False}, {"text": "Lille", "correct": False}]
    assert json.loads(choices) == {"A": "Paris", "B": "Lyon", "C": "Nice", "D": "Lille"}
    assert q(tmp_db, "SELECT instance_id, output_text, mapped_output, is_correct FROM predictions ORDER BY 1") == [
        ("0", " A", "Paris", True), ("1", " D", "Lille", False),
    ]


TABLE = [
    {"model": "m", "question_id": "q1", "output": "4", "rating": 3.0},
    {"model": "m", "question_id": "q2", "output": "five", "rating": 1.0},
    {"model": "m", "question_id": "q3", "output": "6", "rating": 2.5},
]
FLAGS = ["--map", "instance_id=question_id", "--map", "score=rating", "--scale", "ratings=1:3", "--dataset", "ratings"]


def _write_table(path: Path) -> Path:
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(TABLE), path)
    elif path.suffix == ".xlsx":
        import openpyxl

        book = openpyxl.Workbook()
        sheet = book.active
        sheet.append(list(TABLE[0]))
        for row in TABLE:
            sheet.append(list(row.values()))
        book.save(path)
    else:
        path.write_text("model,question_id,output,rating\n" + "".join(f"{r['model']},{r['question_id']},{r['output']},{r['rating']}\n" for r in TABLE))
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".xlsx"])
def test_custom_tables_as_parquet_and_excel_read_with_the_same_mapping_flags(tmp_path, tmp_db, suffix):
    table = _write_table(tmp_path / f"ratings{suffix}")
    r = run_module("ingest", table, "--db", tmp_db, *FLAGS)
    assert r.returncode == 0, r.stderr
    assert q(tmp_db, "SELECT instance_id, output_text, score, is_correct FROM outcomes ORDER BY 1") == [
        ("q1", "4", 3.0, True), ("q2", "five", 1.0, False), ("q3", "6", 2.5, True),
    ]
    assert q(tmp_db, "SELECT source_format, pass_threshold FROM runs") == [(suffix.lstrip("."), 2.4)]


def test_broken_excel_and_parquet_files_are_named_errors(tmp_path, tmp_db):
    for name in ("bad.xlsx", "bad.parquet"):
        (tmp_path / name).write_bytes(b"PK\x03\x04 not a table")
        r = run_module("ingest", tmp_path / name, "--db", tmp_db)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert r.stderr.startswith(f"error: {tmp_path / name}: not a readable ")
