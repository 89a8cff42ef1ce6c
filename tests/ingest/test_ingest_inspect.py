"""Inspect AI logs (.eval zips and .json EvalLogs), read in place from ../shared/fixtures/inspect."""

from __future__ import annotations

import json
import zipfile

import pytest

from conftest import FIXTURES, q, run_module, requires_fixtures
from ingest import IngestError, PassConfig, ReadOptions, ingest_paths
from ingest.registry import choose

pytestmark = requires_fixtures  # reads the shared real logs

INSPECT = FIXTURES / "inspect"
TESTS = INSPECT / "inspect_ai_tests"
EEE = INSPECT / "eee_tests"
UNSCORED = TESTS / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
SCORED = TESTS / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
CANCELLED = TESTS / "2025-05-12T20-28-13-04-00_popularity.json"
MMLU = TESTS / "mmlu-summary-choices.eval"


def reported_accuracy(log) -> float:
    """The log's own accuracy from results.scores, from header.json in a .eval zip."""
    if log.suffix == ".eval":
        with zipfile.ZipFile(log) as archive:
            header = json.loads(archive.read("header.json"))
    else:
        header = json.loads(log.read_text())
    return header["results"]["scores"][0]["metrics"]["accuracy"]["value"]


def outcome(db, log):
    return q(
        db,
        "SELECT r.model, r.dataset, r.main_metric, count(*), count(o.is_correct), avg(o.is_correct::INT), "
        "sum(o.infra_error::INT) FROM outcomes o JOIN runs r USING (run_id) WHERE r.source_path = ? GROUP BY ALL",
        [str(log.resolve())],
    )


@pytest.mark.parametrize("path", [TESTS, EEE, SCORED, CANCELLED, TESTS / "log_read_sample.json"])
def test_auto_recognises_inspect(path):
    assert [r.name for r in choose(path)] == ["inspect"]


CASES = [
    (SCORED, "openai/gpt-4o-mini", "popularity", "match", 10),
    (CANCELLED, "openai/gpt-4o-mini", "popularity", "match", 3),
    (TESTS / "log_read_sample.eval", "ollama/gemma3", "popularity", "match", 1),
    (TESTS / "log_read_sample.json", "ollama/gemma3", "popularity", "match", 1),
    (MMLU, "openai/gpt-4o", "mmlu", "choice", 1),
    (EEE / "data_arc_qwen.json", "ollama/qwen2.5:0.5b", "arc_easy", "choice", 3),
    (EEE / "data_arc_sonnet.json", "anthropic/claude-sonnet-4-0", "arc_easy", "choice", 5),
    (EEE / "data_pubmedqa_gpt4o_mini.json", "openai/azure/gpt-4o-mini", "pubmedqa", "choice", 2),
]


@pytest.fixture(scope="module")
def all_logs_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("inspect") / "inspect.duckdb"
    summary = ingest_paths([TESTS, EEE], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (9, 36, 6, 0)
    return db


@pytest.mark.parametrize("log, model, dataset, scorer, n", CASES, ids=[c[0].name for c in CASES])
def test_accuracy_matches_the_logs_own_results(all_logs_db, log, model, dataset, scorer, n):
    accuracy = reported_accuracy(log)
    assert outcome(all_logs_db, log) == [(model, dataset, scorer, n, n, accuracy, 0)]


def test_reported_accuracies_are_the_expected_values():
    assert [reported_accuracy(c[0]) for c in CASES] == [0.8, 0.6666666666666666, 1.0, 1.0, 0.0, 0.3333333333333333, 1.0, 1.0]


def test_unscored_log_has_predictions_but_no_verdicts(all_logs_db):
    assert outcome(all_logs_db, UNSCORED) == [("openai/gpt-4o-mini", "popularity", None, 10, 0, None, 0)]


def test_cancelled_run_keeps_its_samples_and_says_so(all_logs_db):
    assert q(all_logs_db, "SELECT run_name, status FROM runs WHERE source_path = ?", [str(CANCELLED.resolve())]) == [
        ("popularity:openai/gpt-4o-mini", "cancelled")
    ]
    assert q(all_logs_db, "SELECT DISTINCT status FROM runs WHERE source_path <> ?", [str(CANCELLED.resolve())]) == [
        ("complete",)
    ]
    assert q(
        all_logs_db,
        "SELECT instance_id, output_text, is_correct FROM outcomes JOIN runs USING (run_id) "
        "WHERE source_path = ? ORDER BY instance_id",
        [str(CANCELLED.resolve())],
    ) == [("1", "Yes", True), ("2", "No", True), ("3", "No", False)]


def test_same_run_in_both_containers_gives_identical_outcomes(all_logs_db):
    rows = {}
    for log in (TESTS / "log_read_sample.eval", TESTS / "log_read_sample.json"):
        rows[log.suffix] = q(
            all_logs_db,
            "SELECT o.model, o.dataset, o.instance_id, o.score, o.is_correct, o.output_text, i.input_text, i.refs, "
            "p.mapped_output, p.metrics FROM outcomes o JOIN runs r USING (run_id) "
            "JOIN instances i USING (run_id, instance_id) JOIN predictions p USING (run_id, instance_id) "
            "WHERE r.source_path = ?",
            [str(log.resolve())],
        )
    assert rows[".eval"] == rows[".json"]
    # older logs have no output.completion: the text comes from the first choice's message
    assert rows[".eval"][0][3:6] == (1.0, True, "Yes\n")


def test_multiple_choice_refs_and_choices(all_logs_db):
    row = q(
        all_logs_db,
        "SELECT i.choices, i.refs, p.output_text, p.mapped_output, p.score FROM predictions p "
        "JOIN instances i USING (run_id, instance_id) JOIN runs r USING (run_id) WHERE r.source_path = ?",
        [str(MMLU.resolve())],
    )[0]
    assert json.loads(row[0]) == {"A": "6.0 e", "B": "6.8 eV", "C": "12.2 eV", "D": "13.6 eV"}
    assert [r["text"] for r in json.loads(row[1]) if r["correct"]] == ["6.0 e"]
    assert row[2:] == ("ANSWER: C", "C", 0.0)


def test_string_ids_pair_across_models(all_logs_db):
    assert q(
        all_logs_db,
        "SELECT instance_id FROM outcomes WHERE dataset = 'pubmedqa' ORDER BY 1",
    ) == [("12377809",), ("26163474",)]
    pairs = q(
        all_logs_db,
        "SELECT count(*) FROM outcomes a JOIN outcomes b ON a.dataset = b.dataset AND a.instance_id = b.instance_id "
        "AND a.model < b.model WHERE a.dataset = 'arc_easy'",
    )
    assert pairs == [(3,)]


# Synthetic logs for what the fixtures do not show: attachments, epochs, errors, partial credit.

HEADER = {
    "version": 2,
    "status": "error",
    "eval": {"task": "toy", "task_id": "T1", "run_id": "R1", "model": "m/one"},
    "results": {"scores": [{"name": "grader", "metrics": {}}]},
    "error": {"message": "boom"},
}


def _sample(sample_id, epoch, value, **extra):
    return {
        "id": sample_id, "epoch": epoch,
        "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "attachment://q1"}],
        "target": ["4", "four"],
        "output": {"choices": [{"message": {"role": "assistant", "content": [
            {"type": "reasoning", "reasoning": "2+2"}, {"type": "text", "text": "attachment://a1"}]}}]},
        "scores": {"grader": {"value": value, "answer": "4"}, "other": {"value": {"acc": "C", "f1": 0.5}}},
        "attachments": {"q1": "What is 2+2?", "a1": "It is 4."},
        **extra,
    }


SAMPLES = [
    _sample(1, 1, "C"), _sample(1, 2, "P"), _sample("b", 1, True), _sample("c", 1, 0.25),
    _sample("d", 1, "N"), _sample("e", 1, "I", error={"message": "rate limited"}),
]


def _write_eval(path, header=HEADER, samples=SAMPLES):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
    return path


def test_synthetic_eval_attachments_epochs_errors_and_values(tmp_path, tmp_db):
    log = _write_eval(tmp_path / "toy.eval")
    summary = ingest_paths([log], db=tmp_db)
    # "N" (no answer) counts as 0, as Inspect's accuracy() counts it: a failure, not unscored
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (1, 6, 3, 1)
    assert q(
        tmp_db,
        "SELECT instance_id, train_trial_index, score, is_correct, infra_error, output_text FROM outcomes ORDER BY 1, 2",
    ) == [
        ("1", 0, 1.0, True, False, "It is 4."),
        ("1", 1, 0.5, False, False, "It is 4."),
        ("b", 0, 1.0, True, False, "It is 4."),
        ("c", 0, 0.25, False, False, "It is 4."),
        ("d", 0, 0.0, False, False, "It is 4."),
        ("e", 0, None, None, True, "It is 4."),
    ]
    inst = q(tmp_db, "SELECT input_text, input_messages, refs FROM instances WHERE instance_id = '1'")[0]
    assert inst[0] == "What is 2+2?"
    assert json.loads(inst[1])[1] == {"role": "user", "content": "What is 2+2?"}
    assert json.loads(inst[2]) == [{"text": "4", "correct": True}, {"text": "four", "correct": True}]
    pred = q(tmp_db, "SELECT thinking_text, mapped_output, metrics, error_message FROM predictions WHERE instance_id = 'e'")[0]
    assert pred[:2] == ("2+2", "4")
    # a dict value is no one score: each field that is a number, never its first field as the scorer's
    assert json.loads(pred[2]) == {"grader": 0.0, "other/acc": 1.0, "other/f1": 0.5}
    assert pred[3] == "rate limited"
    assert q(tmp_db, "SELECT run_name, status, main_metric FROM runs") == [("toy:m/one", "error", "grader")]


def test_threshold_lets_partial_credit_pass(tmp_path, tmp_db):
    log = _write_eval(tmp_path / "toy.eval")
    ingest_paths([log], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(["toy=0.5"])))
    assert q(tmp_db, "SELECT instance_id, train_trial_index, is_correct FROM outcomes WHERE score IS NOT NULL ORDER BY 1, 2") == [
        ("1", 0, True), ("1", 1, True), ("b", 0, True), ("c", 0, False), ("d", 0, False),
    ]


def test_unknown_scorer_and_empty_log_are_errors(tmp_path, tmp_db):
    log = _write_eval(tmp_path / "toy.eval")
    options = ReadOptions(pass_config=PassConfig.build(metrics=["toy=judge"]))
    with pytest.raises(IngestError, match=rf"{log}: no scorer 'judge' in the samples \(scorers: grader, other\)"):
        ingest_paths([log], db=tmp_db, options=options)
    empty = _write_eval(tmp_path / "empty.eval", samples=[])
    with pytest.raises(IngestError, match=rf"{empty}: no samples in the log"):
        ingest_paths([empty], db=tmp_db)


def test_unfinished_eval_reads_the_journal_header(tmp_path, tmp_db):
    log = tmp_path / "running.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": HEADER["eval"]}))
        archive.writestr("samples/1_epoch_1.json", json.dumps(_sample(1, 1, "I")))
    ingest_paths([log], db=tmp_db)
    assert q(tmp_db, "SELECT run_name, status, main_metric, is_correct FROM outcomes JOIN runs USING (run_id)") == [
        ("toy:m/one", "started", "grader", False)
    ]


def test_truncated_eval_is_an_error_and_writes_nothing(tmp_path, tmp_db):
    good = _write_eval(tmp_path / "good.eval")
    ingest_paths([good], db=tmp_db)
    broken = tmp_path / "broken.eval"
    broken.write_bytes(good.read_bytes()[:300])
    with pytest.raises(IngestError, match=rf"{broken}: corrupt or truncated \.eval archive"):
        ingest_paths([broken], db=tmp_db)
    assert q(tmp_db, "SELECT count(*) FROM runs") == [(1,)]


def test_bad_sample_json_names_the_member(tmp_path, tmp_db):
    log = tmp_path / "bad.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("header.json", json.dumps(HEADER))
        archive.writestr("samples/1_epoch_1.json", '{"id": 1, "epoch": 1,\n "input": ')
    with pytest.raises(IngestError, match=rf"{log}!samples/1_epoch_1.json:2:\d+: truncated JSON"):
        ingest_paths([log], db=tmp_db)


def test_truncated_json_log(tmp_path, tmp_db):
    log = tmp_path / "cut.json"
    log.write_text(CANCELLED.read_text()[:5000])
    with pytest.raises(IngestError, match=rf"{log}:\d+:\d+: truncated JSON"):
        ingest_paths([log], db=tmp_db, fmt="inspect")
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]


def test_missing_model_is_an_error_unless_given(tmp_path, tmp_db):
    header = {**HEADER, "eval": {"task": "toy", "task_id": "T2"}}
    log = _write_eval(tmp_path / "nomodel.eval", header, SAMPLES[:1])
    with pytest.raises(IngestError, match=rf"{log}: eval.model is missing"):
        ingest_paths([log], db=tmp_db)
    ingest_paths([log], db=tmp_db, options=ReadOptions(model="given"))
    assert q(tmp_db, "SELECT model FROM outcomes") == [("given",)]


def test_cli_summary_and_bad_input(tmp_path, tmp_db):
    ok = run_module("ingest", EEE, "--db", tmp_db, "--format", "inspect")
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[0] == "harness check: 3 of 3 runs agree with the harness's own headline"
    assert lines[-1].startswith("ingested 3 runs, 10 predictions, 2 failures in ")
    broken = tmp_path / "broken.eval"
    broken.write_bytes(b"PK\x03\x04 not really a zip")
    failed = run_module("ingest", broken, "--db", tmp_db)
    assert failed.returncode != 0
    assert f"{broken}: corrupt or truncated .eval archive" in failed.stderr
    assert "Traceback" not in failed.stderr
