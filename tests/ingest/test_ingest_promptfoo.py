"""promptfoo export JSON, read in place from ../shared/fixtures/promptfoo."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import FIXTURES, q, requires_fixtures
from ingest import IngestError, ingest_paths
from ingest.registry import choose

pytestmark = requires_fixtures

EXPORT = FIXTURES / "promptfoo" / "sample-export.json"
DESCRIPTION = "Comparing OpenAI flagship and mini models performance on riddles"


@pytest.fixture(scope="module")
def pf_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("promptfoo") / "pf.duckdb"
    summary = ingest_paths([EXPORT], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (2, 4, 4, 0)
    return db


@pytest.mark.parametrize("path", [EXPORT, EXPORT.parent])
def test_recognised_by_content(path):
    assert [r.name for r in choose(path)] == ["promptfoo"]


def test_one_prediction_per_provider_and_test(pf_db):
    # every result failed its latency assertion (3000 ms) in this export: promptfoo's own verdict
    export = json.loads(EXPORT.read_text())
    assert [(r["provider"]["id"], r["testIdx"], r["success"]) for r in export["results"]["results"]] == [
        ("openai:gpt-5-mini", 0, False), ("openai:gpt-5", 0, False),
        ("openai:gpt-5-mini", 1, False), ("openai:gpt-5", 1, False),
    ]
    assert q(
        pf_db,
        "SELECT model, dataset, instance_id, score, is_correct FROM outcomes ORDER BY model, instance_id",
    ) == [
        ("openai:gpt-5", DESCRIPTION, "0", 0.5, False),
        ("openai:gpt-5", DESCRIPTION, "1", 0.6666666666666666, False),
        ("openai:gpt-5-mini", DESCRIPTION, "0", 0.75, False),
        ("openai:gpt-5-mini", DESCRIPTION, "1", 0.6666666666666666, False),
    ]


def test_pass_rate_equals_the_exports_own_counts(pf_db):
    export = json.loads(EXPORT.read_text())
    counts = {p["provider"]: (p["metrics"]["testPassCount"], p["metrics"]["testFailCount"]) for p in export["results"]["prompts"]}
    assert counts == {"openai:gpt-5": (0, 2), "openai:gpt-5-mini": (0, 2)}
    assert q(
        pf_db,
        "SELECT model, n_predictions, n_failures, harness_value, harness_n, harness_agrees, variant FROM runs ORDER BY model",
    ) == [("openai:gpt-5", 2, 2, 0.0, 2, True, None), ("openai:gpt-5-mini", 2, 2, 0.0, 2, True, None)]


def test_prompt_vars_and_assertions_are_kept(pf_db):
    row = q(
        pf_db,
        "SELECT i.input_text, i.refs, p.output_text, p.annotations FROM instances i "
        "JOIN predictions p USING (run_id, instance_id) JOIN runs r USING (run_id) "
        "WHERE r.model = 'openai:gpt-5' AND i.instance_id = '0'",
    )[0]
    riddle = "I speak without a mouth and hear without ears. I have no body, but I come alive with wind. What am I?"
    assert row[0] == f"Solve this riddle: {riddle}"
    # cost and latency assertions carry a threshold, not a reference value
    assert [r["text"] for r in json.loads(row[1])] == ["contains: echo", "llm-rubric: Do not apologize"]
    assert row[2] == "An echo."
    annotations = json.loads(row[3])
    assert annotations["vars"] == {"riddle": riddle}
    assert [(a["assertion"]["type"], a["pass"]) for a in annotations["assertions"]] == [
        ("cost", False), ("latency", False), ("contains", True), ("llm-rubric", True),
    ]
    assert annotations["reason"] == "Latency 6197ms is greater than threshold 3000ms"


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda t: t[: len(t) // 2], r"sample-export.json:\d+:\d+: (truncated|invalid) JSON"),
        (lambda t: t.replace('"success": false', '"success": "no"', 1), r"results.results\[0\]: success 'no' is not true/false"),
        (lambda t: t.replace('"testIdx": 0', '"testIdx": "zero"', 1), r"results.results\[0\]: testIdx 'zero' is not a number"),
        (lambda t: json.dumps({**json.loads(t), "results": []}), r"sample-export.json: results: expected dict, found list"),
    ],
    ids=["truncated", "wrong-type", "bad-index", "no-results"],
)
def test_damaged_exports_are_refused_and_nothing_is_written(tmp_path, damage, message):
    target = tmp_path / "logs" / EXPORT.name
    target.parent.mkdir(parents=True)
    shutil.copy(EXPORT, target)
    target.chmod(0o644)
    target.write_text(damage(target.read_text()))
    db = tmp_path / "store.duckdb"
    with pytest.raises(IngestError) as err:
        ingest_paths([target], db=db, fmt="promptfoo")
    assert str(target) in err.value.message
    assert re.search(message, err.value.message), err.value.message
    assert not db.exists()
