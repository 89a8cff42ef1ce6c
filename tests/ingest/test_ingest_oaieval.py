"""OpenAI evals `oaieval` JSONL logs, read in place from ../shared/fixtures/openai-evals."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURES, q, reader_skips, requires_fixtures
from ingest import IngestError, ingest_paths
from ingest.registry import choose

pytestmark = requires_fixtures

ZENO = FIXTURES / "openai-evals" / "zeno"
TORT = ZENO / "us-tort-law-turbo.jsonl"
MEDMCQA = ZENO / "medmcqa-turbo-2023-03-15_example.jsonl"


def _events(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _log_counts(path):
    """(matches, correct, final_report accuracy) straight from the log."""
    rows = _events(path)
    matches = [r["data"]["correct"] for r in rows if r.get("type") == "match"]
    report = next(r["final_report"] for r in rows if "final_report" in r)
    return len(matches), sum(matches), report["accuracy"]


@pytest.fixture(scope="module")
def oai_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("oaieval") / "oai.duckdb"
    summary = ingest_paths([ZENO], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (2, 305, 136, 0)
    assert reader_skips(summary) == []
    return db


@pytest.mark.parametrize("path", [ZENO, TORT, MEDMCQA])
def test_recognised_by_content(path):
    assert [r.name for r in choose(path)] == ["openai-evals"]


def test_log_counts_are_the_expected_values():
    assert _log_counts(TORT) == (5, 1, 0.2)
    assert _log_counts(MEDMCQA) == (300, 168, 0.56)


def test_runs_and_pass_rates_equal_final_report(oai_db):
    assert q(
        oai_db,
        "SELECT model, dataset, dataset_raw, main_split, n_predictions, n_failures, harness_metric, harness_value, "
        "harness_agrees FROM runs ORDER BY dataset",
    ) == [
        ("gpt-3.5-turbo", "medmcqa", "medmcqa.dev.v0", "dev", 300, 132, "accuracy", 0.56, True),
        ("gpt-3.5-turbo", "us-tort-law", "us-tort-law.dev.v0", "dev", 5, 4, "accuracy", 0.2, True),
    ]
    for path in (TORT, MEDMCQA):
        n, correct, accuracy = _log_counts(path)
        assert q(
            oai_db,
            "SELECT count(*), avg(o.is_correct::INT) FROM outcomes o JOIN runs r USING (run_id) WHERE r.source_path = ?",
            [str(path.resolve())],
        ) == [(n, accuracy)]


def test_sampling_and_match_are_paired(oai_db):
    row = q(
        oai_db,
        "SELECT i.split, i.input_text, i.input_messages, i.refs, p.output_text, p.score, p.is_correct "
        "FROM instances i JOIN predictions p USING (run_id, instance_id) WHERE i.instance_id = 'us-tort-law.dev.284'",
    )[0]
    assert row[0] == "dev"
    assert row[1].startswith("A homeowner hired a building contractor to rebuild her front")
    assert len(json.loads(row[2])) == 10  # the system prompt, four few-shot pairs, the question
    assert json.loads(row[3]) == [{"text": "A", "correct": True}]
    assert row[4:] == ("D", 0.0, False)
    assert q(
        oai_db,
        "SELECT p.output_text, p.is_correct, i.refs FROM instances i JOIN predictions p USING (run_id, instance_id) "
        "WHERE i.instance_id = 'medmcqa.dev.252'",
    ) == [("b) Clostridia", True, json.dumps([{"text": "b) Clostridia", "correct": True}], separators=(",", ":")))]


def test_settings_from_spec(oai_db):
    settings = json.loads(q(oai_db, "SELECT settings FROM runs WHERE dataset = 'us-tort-law'")[0][0])
    # the shot count under the name every reader gives it; eval_name picks the part (dev, v0) of the eval
    assert settings == {
        "eval_name": "us-tort-law.dev.v0", "subset": "us-tort-law.dev.v0", "eval_class": "evals.elsuite.basic.match:Match",
        "n_shot": 4, "max_samples": 5, "seed": 20220722, "harness": "openai-evals",
    }


def _copy(tmp_path):
    target = tmp_path / "logs" / TORT.name
    target.parent.mkdir(parents=True)
    shutil.copy(TORT, target)
    target.chmod(0o644)
    return target


def _drop_spec(text):
    return "\n".join(line for line in text.splitlines() if not line.startswith('{"spec"')) + "\n"


@pytest.mark.parametrize(
    "damage, fmt, message",
    [
        (lambda t: t.rstrip()[:-30], "auto", r"us-tort-law-turbo.jsonl:12:\d+: truncated JSON line"),
        (lambda t: t.replace('"correct": false', '"correct": "no"', 1), "auto", r"sample us-tort-law.dev.284: match.correct 'no' is not true/false"),
        (lambda t: t.replace('"data": {"correct"', '"data": ["correct"', 1), "auto", r"us-tort-law-turbo.jsonl:\d+:\d+: invalid JSON"),
        (_drop_spec, "openai-evals", r"us-tort-law-turbo.jsonl: no spec line"),
        (_drop_spec, "auto", r"us-tort-law-turbo.jsonl: looks like OpenAI evals events without the spec line"),
    ],
    ids=["truncated", "wrong-type", "garbage", "no-spec-forced", "no-spec-auto"],
)
def test_damaged_logs_are_refused_and_nothing_is_written(tmp_path, damage, fmt, message):
    target = _copy(tmp_path)
    target.write_text(damage(target.read_text()))
    db = tmp_path / "store.duckdb"
    with pytest.raises(IngestError) as err:
        ingest_paths([target], db=db, fmt=fmt)
    assert str(target) in err.value.message
    assert re.search(message, err.value.message), err.value.message
    assert not db.exists()
