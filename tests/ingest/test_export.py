"""`python -m ingest export --format eee`: valid Every Eval Ever 0.3.0 files that read back
to the same outcomes."""

from __future__ import annotations

import hashlib
import json

import jsonschema
import pytest

from conftest import FIXTURES, MMLU_SUITE, q, reader_skips, requires_fixtures, run_module
from export import export_eee
from ingest import IngestError, ingest_paths

pytestmark = requires_fixtures

SCHEMAS = FIXTURES / "every-eval-ever" / "schemas"
OUTCOME_COLUMNS = "model, dataset, domain, split, instance_id, score, is_correct, output_text"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    work = tmp_path_factory.mktemp("export")
    source = work / "source.duckdb"
    ingest_paths([MMLU_SUITE], db=source)
    summary = export_eee(work / "out", db=source)
    return source, work / "out", summary


def test_export_writes_an_aggregate_and_samples_per_run(exported):
    _, out, summary = exported
    assert (summary.runs, summary.predictions) == (50, 1000)
    aggregates = sorted(out.glob("data/mmlu/*/*/*.json"))
    samples = sorted(out.glob("data/mmlu/*/*/*_samples.jsonl"))
    assert len(aggregates) == len(samples) == 50
    assert sorted({p.parent.relative_to(out / "data" / "mmlu").as_posix() for p in aggregates}) == [
        "groq/llama3-70b-8192", "groq/llama3-8b-8192", "huggingface/Meta-Llama-3-8B",
        "together/Llama-3-70b-chat-hf", "together/Llama-3-8b-chat-hf",
    ]


def _validate_tree(out) -> int:
    """Validate every exported aggregate and instance record; the number of records."""
    aggregate_schema = jsonschema.Draft7Validator(json.loads((SCHEMAS / "eval.schema.json").read_text()))
    instance_schema = jsonschema.Draft7Validator(json.loads((SCHEMAS / "instance_level_eval.schema.json").read_text()))
    rows = 0
    for aggregate_path in out.glob("data/**/*.json"):
        aggregate = json.loads(aggregate_path.read_text())
        assert list(aggregate_schema.iter_errors(aggregate)) == []
        sidecar = out / aggregate["detailed_evaluation_results"]["file_path"]
        lines = sidecar.read_text().splitlines()
        assert aggregate["detailed_evaluation_results"]["total_rows"] == len(lines)
        assert aggregate["detailed_evaluation_results"]["checksum"] == hashlib.sha256(sidecar.read_bytes()).hexdigest()
        for line in lines:
            record = json.loads(line)
            assert list(instance_schema.iter_errors(record)) == []
            assert record["evaluation_id"] == aggregate["evaluation_id"]
            rows += 1
    return rows


def test_exported_files_validate_against_the_eee_schema(exported):
    assert _validate_tree(exported[1]) == 1000


def test_reingest_gives_the_same_outcomes(exported, tmp_path):
    source, out, _ = exported
    back = tmp_path / "back.duckdb"
    summary = ingest_paths([out], db=back)
    assert (summary.runs, summary.predictions, summary.failures, reader_skips(summary)) == (50, 1000, 532, [])
    original = q(source, f"SELECT {OUTCOME_COLUMNS} FROM outcomes ORDER BY ALL")
    assert len(original) == 1000
    assert q(back, f"SELECT {OUTCOME_COLUMNS} FROM outcomes ORDER BY ALL") == original
    # the aggregate each file carries is the pass rate it reads back to
    assert q(back, "SELECT count(*) FILTER (WHERE harness_agrees), count(*) FROM runs") == [(50, 50)]


def test_filters_and_unknown_names(exported, tmp_path):
    source, _, _ = exported
    summary = export_eee(tmp_path / "one", db=source, models=["groq/llama3-8b-8192"])
    assert (summary.runs, summary.predictions) == (10, 200)
    with pytest.raises(IngestError, match="--datasets gsm8k: not in the store; it has: mmlu"):
        export_eee(tmp_path / "none", db=source, datasets=["gsm8k"])
    assert not (tmp_path / "none").exists()


def test_unscored_and_failed_requests_round_trip(tmp_path):
    """EEE requires a score and a verdict on every record: absent ones travel as metadata."""
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        '{"model": "m/one", "instance_id": "q1", "output": "4", "correct": true, "split": "test"}\n'
        '{"model": "m/one", "instance_id": "q2", "output": "five", "split": "test"}\n'
    )
    source, back = tmp_path / "s.duckdb", tmp_path / "b.duckdb"
    ingest_paths([preds], db=source)
    export_eee(tmp_path / "out", db=source)
    ingest_paths([tmp_path / "out"], db=back)
    assert q(back, f"SELECT {OUTCOME_COLUMNS} FROM outcomes ORDER BY instance_id") == q(
        source, f"SELECT {OUTCOME_COLUMNS} FROM outcomes ORDER BY instance_id"
    ) == [("m/one", "preds", None, "test", "q1", 1.0, True, "4"), ("m/one", "preds", None, "test", "q2", None, None, "five")]


def test_cli_export(exported, tmp_path):
    source, _, _ = exported
    r = run_module("ingest", "export", "--format", "eee", "--out", tmp_path / "cli", "--db", source,
                   "--models", "together/Llama-3-70b-chat-hf", "--datasets", "mmlu")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().startswith("exported 10 runs, 200 predictions as Every Eval Ever 0.3.0 in ")
    assert len(list((tmp_path / "cli").glob("data/mmlu/together/Llama-3-70b-chat-hf/*.json"))) == 10
    bad = run_module("ingest", "export", "--out", tmp_path / "x", "--db", source, "--models", "nope")
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: --models nope: not in the store; it has: groq/llama3-70b-8192")


def test_a_run_without_any_verdict_round_trips_unscored(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text('{"model": "m/x", "instance_id": "1", "output": "a", "correct": ""}\n')
    source, back = tmp_path / "s.duckdb", tmp_path / "b.duckdb"
    ingest_paths([preds], db=source)
    assert export_eee(tmp_path / "out", db=source).runs == 1
    (aggregate,) = (tmp_path / "out").glob("data/preds/m/x/*[0-9a-f].json")
    assert json.loads(aggregate.read_text())["evaluation_results"] == []
    ingest_paths([tmp_path / "out"], db=back)
    assert q(back, f"SELECT {OUTCOME_COLUMNS} FROM outcomes") == [("m/x", "preds", None, None, "1", None, None, "a")]
    assert q(back, "SELECT harness_value FROM runs") == [(None,)]


# What a plain `python -m ingest` of each shared fixture folder stores (runs, predictions): every
# log its readers can read without flags (agents: the Inspect CTF log and the OpenHands output; the
# Inspect tool-error log names its model and task "..." — placeholders — and the rest name no
# model: skipped and named).
FIXTURE_FOLDERS = {"agents": (2, 17), "every-eval-ever": (4, 26), "helm": (59, 1625), "inspect": (9, 36),
                   "lm-eval": (6, 995), "openai-evals": (2, 305), "promptfoo": (2, 4)}


def test_every_fixture_format_round_trips(tmp_path):
    """HELM, lm-eval, Inspect, EEE, OpenAI evals, promptfoo and agent outcomes all survive the trip."""
    folders = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
    assert folders == sorted(FIXTURE_FOLDERS), "a fixture folder came or went: give its exact counts above"
    source, back = tmp_path / "s.duckdb", tmp_path / "b.duckdb"
    ingest_paths([FIXTURES], db=source)
    summary = export_eee(tmp_path / "out", db=source)
    ingest_paths([tmp_path / "out"], db=back)
    columns = f"{OUTCOME_COLUMNS}, train_trial_index, infra_error"
    original = q(source, f"SELECT {columns} FROM outcomes ORDER BY ALL")
    runs, predictions = (sum(n[i] for n in FIXTURE_FOLDERS.values()) for i in (0, 1))
    assert (summary.runs, summary.predictions) == (runs, len(original)) == (84, 3008)
    assert q(back, f"SELECT {columns} FROM outcomes ORDER BY ALL") == original
    assert _validate_tree(tmp_path / "out") == predictions
