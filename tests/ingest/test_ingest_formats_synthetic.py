"""What the EEE, OpenAI evals and promptfoo fixtures do not show, on small logs written here:
linked results and continuous scores, multi-turn records, failed requests, trials, several
prompts per provider, evals without match events."""

from __future__ import annotations

import json

import pytest

from conftest import q
from ingest import IngestError, ingest_paths

EVAL_ID = "bench/org/model/1750000000"


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _record(sample_id, result_id, score, is_correct, **extra):
    record = {
        "schema_version": "0.3.0", "evaluation_id": EVAL_ID, "model_id": "org/model",
        "evaluation_name": result_id.split("/")[0], "evaluation_result_id": result_id, "sample_id": sample_id,
        "interaction_type": "single_turn", "input": {"raw": f"question {sample_id}", "reference": ["ref"]},
        "output": {"raw": [f"answer {sample_id}"]}, "answer_attribution": [],
        "evaluation": {"score": score, "is_correct": is_correct},
    }
    return {**record, **extra}


def _result(result_id, score, **metric):
    return {
        "evaluation_result_id": result_id, "evaluation_name": result_id.split("/")[0],
        "source_data": {"dataset_name": result_id, "source_type": "hf_dataset", "hf_repo": "org/data", "hf_split": "test"},
        "metric_config": {"lower_is_better": False, **metric}, "score_details": {"score": score},
    }


def test_eee_linked_results_continuous_scores_trials_and_failed_requests(tmp_path):
    uuid = "0b6f7c3e-1d2a-4c5b-9e8f-0a1b2c3d4e5f"
    aggregate = {
        "schema_version": "0.3.0", "evaluation_id": EVAL_ID, "retrieved_timestamp": "1750000001",
        "source_metadata": {"source_type": "evaluation_run", "source_organization_name": "o", "evaluator_relationship": "third_party"},
        "eval_library": {"name": "lm_eval", "version": "0.4.9"},
        "model_info": {"name": "model", "id": "org/model", "additional_details": {"deployment_type": "unknown", "model_availability": "unknown"}},
        "evaluation_results": [
            _result("qa/exact", 0.5, score_type="binary"),
            _result("essay/judge", 7.0, score_type="continuous", min_score=0, max_score=10, metric_id="judge"),
        ],
        "detailed_evaluation_results": {"format": "jsonl", "file_path": f"data/b/org/model/{uuid}_samples.jsonl"},
    }
    (tmp_path / f"{uuid}.json").write_text(json.dumps(aggregate))
    _jsonl(tmp_path / f"{uuid}_samples.jsonl", [
        _record("q1", "qa/exact", 1.0, True),
        _record("q2", "qa/exact", 0.0, False),
        _record("q2", "qa/exact", 0.0, False),  # the same sample again: a second trial
        _record("q3", "qa/exact", 0.0, False, output={"raw": []}, error="timeout after 60 s"),
        _record("e1", "essay/judge", 8.0, None),
        _record("e2", "essay/judge", 6.0, None),
        _record("t1", "qa/exact", 1.0, True, interaction_type="multi_turn", output=None, messages=[
            {"turn_idx": 0, "role": "user", "content": "hi"},
            {"turn_idx": 1, "role": "assistant", "content": "first"},
            {"turn_idx": 2, "role": "user", "content": "again"},
            {"turn_idx": 3, "role": "assistant", "content": "final answer"},
        ]),
    ])
    db = tmp_path / "s.duckdb"
    summary = ingest_paths([tmp_path], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (2, 7, 3, 1)
    assert q(db, "SELECT instance_id, train_trial_index, split, score, is_correct, infra_error, output_text FROM outcomes ORDER BY ALL") == [
        ("e1", 0, "test", 8.0, True, False, "answer e1"),
        ("e2", 0, "test", 6.0, False, False, "answer e2"),
        ("q1", 0, "test", 1.0, True, False, "answer q1"),
        ("q2", 0, "test", 0.0, False, False, "answer q2"),
        ("q2", 1, "test", 0.0, False, False, "answer q2"),
        ("q3", 0, "test", None, None, True, None),
        ("t1", 0, "test", 1.0, True, False, "final answer"),
    ]
    assert q(db, "SELECT dataset, main_metric, main_metric_source, metric_max, pass_threshold, main_split, harness_value, harness_agrees, harness_note FROM runs ORDER BY dataset") == [
        ("essay", "judge", "eee score threshold", 10.0, 7.0, "test", 7.0, True, "agrees: mean 7 over 2 (judge, split test)"),
        ("qa", "is_correct", "eee is_correct", None, None, "test", 0.5, True, "agrees: 0.5 = 2/4 (qa, split test)"),
    ]
    assert q(db, "SELECT json_array_length(input_messages), error_message FROM instances JOIN predictions USING (run_id, instance_id) WHERE instance_id IN ('t1', 'q3') ORDER BY instance_id") == [
        (None, "timeout after 60 s"), (4, None),
    ]


def _event(n, sample_id, kind, data):
    return {"run_id": "r1", "event_id": n, "sample_id": sample_id, "type": kind, "data": data, "created_by": "", "created_at": ""}


SPEC = {"spec": {"model_name": "gpt-x", "eval_name": "arith.dev.v0", "base_eval": "arith", "split": "dev", "run_id": "r1"}}


def test_oaieval_raw_samples_errors_and_no_final_report(tmp_path):
    log = _jsonl(tmp_path / "log.jsonl", [
        SPEC,
        _event(0, "arith.dev.1", "raw_sample", {"input": [{"role": "user", "content": "2+2?"}], "ideal": "4"}),
        _event(1, "arith.dev.1", "sampling", {"prompt": [{"role": "user", "content": "2+2?"}], "sampled": ["5"]}),
        _event(2, "arith.dev.1", "match", {"correct": False, "expected": "4", "picked": None}),
        _event(3, "arith.dev.2", "raw_sample", {"input": "3+3?", "ideal": ["6", "six"]}),
        _event(4, "arith.dev.2", "error", {"type": "RateLimitError", "message": "429"}),
    ])
    db = tmp_path / "s.duckdb"
    summary = ingest_paths([log], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (1, 2, 1, 1)
    assert q(db, "SELECT model, dataset, status, harness_value FROM runs") == [("gpt-x", "arith", "started", None)]
    assert q(db, "SELECT i.input_text, i.refs, p.output_text, p.is_correct, p.infra_error FROM instances i JOIN predictions p USING (run_id, instance_id) ORDER BY i.instance_id") == [
        ("2+2?", '[{"text":"4","correct":true}]', "5", False, False),
        ("3+3?", '[{"text":"6","correct":true},{"text":"six","correct":true}]', None, None, True),
    ]


def test_oaieval_without_match_events_is_skipped_with_its_reason(tmp_path):
    log = _jsonl(tmp_path / "graded.jsonl", [
        SPEC,
        _event(0, "arith.dev.1", "sampling", {"prompt": "2+2?", "sampled": "4"}),
        _event(1, "arith.dev.1", "metrics", {"choice": "Y", "score": 1.0}),
    ])
    # the only log skipped: nothing loaded, and the load fails with the reason
    with pytest.raises(IngestError) as caught:
        ingest_paths([log], db=tmp_path / "s.duckdb")
    assert caught.value.message.endswith(
        f"  no match events (events: metrics, sampling); Faultline reads match-scored evals (1): {log}")


def _pf_result(provider, prompt, test_idx, success, failure_reason=0, **extra):
    return {
        "provider": {"id": provider}, "prompt": {"raw": prompt.replace("{{q}}", f"q{test_idx}"), "label": prompt},
        "promptId": prompt, "testIdx": test_idx, "success": success, "score": float(success),
        "failureReason": failure_reason, "response": {"output": f"out {test_idx}"},
        "testCase": {"vars": {"q": f"q{test_idx}"}, "assert": [{"type": "equals", "value": f"a{test_idx}"}]},
        "gradingResult": {"pass": success, "score": float(success), "reason": "ok" if success else "no"}, **extra,
    }


def test_promptfoo_several_prompts_per_provider_and_errors(tmp_path):
    export = {
        "evalId": "eval-1",
        "results": {"version": 3, "prompts": [], "results": [
            _pf_result("p:a", "Answer: {{q}}", 0, True),
            _pf_result("p:a", "Answer: {{q}}", 1, False),
            _pf_result("p:a", "Think, then answer: {{q}}", 0, True),
            _pf_result("p:a", "Think, then answer: {{q}}", 1, False, failure_reason=2, error="API error 500", response=None),
        ]},
        "config": {},
    }
    path = tmp_path / "out.json"
    path.write_text(json.dumps(export))
    db = tmp_path / "s.duckdb"
    summary = ingest_paths([path], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (2, 4, 1, 1)
    assert q(db, "SELECT model, dataset, variant, n_predictions, n_failures, n_infra_errors FROM runs ORDER BY variant") == [
        ("p:a", "out", "prompt=Answer: {{q}}", 2, 1, 0),
        ("p:a", "out", "prompt=Think, then answer: {{q}}", 2, 0, 1),
    ]
    assert q(db, "SELECT error_message FROM predictions WHERE infra_error") == [("API error 500",)]
