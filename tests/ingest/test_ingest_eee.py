"""Every Eval Ever instance-level files (schema 0.2.x and 0.3.0), read in place from
../shared/fixtures/every-eval-ever; and the whole fixture tree read at once."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, q, reader_skips, requires_fixtures, run_module
from ingest import IngestError, ingest_paths
from ingest.registry import choose

pytestmark = requires_fixtures

EEE = FIXTURES / "every-eval-ever"
DEMO = EEE / "schema_0.3.0_reference_demo"
DEMO_AGG = DEMO / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json"
DEMO_SAMPLES = DEMO / "f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40_samples.jsonl"
HELM_CONVERTED = EEE / "schema_0.2.1_helm_converted"
MMLU_GPT2 = HELM_CONVERTED / "mmlu__openai_gpt2__None_samples.jsonl"
T2I = EEE / "schema_0.2.2_t2i_example"
AGGREGATES = EEE / "aggregate_examples"

# (model, dataset, domain, predictions, passed, failed) per run, from the files' evaluation fields
RUNS = [
    ("demo-org/demo-model", "demo-source.demo_bench", "arithmetic", 1, 1, 0),
    ("eleutherai/pythia-1b-v0", "hellaswag", None, 10, 3, 7),
    ("openai/gpt2", "mmlu", None, 10, 1, 9),
    ("openai/gpt2", "narrative_qa", None, 5, 0, 5),
]
SKIPPED = [
    (str(AGGREGATES / "676f4465-ce78-411a-9f5a-c97b3d2eac4f.json"), "aggregate scores only, no instance-level samples"),
    (str(AGGREGATES / "98ea850e-7019-4728-a558-8b1819ec47c2.json"), "aggregate scores only, no instance-level samples"),
    (
        str(T2I / "geneval_sdxl_example_samples.jsonl"),
        "1 text_to_image record of geneval_overall (stabilityai/stable-diffusion-xl-base-1.0): Faultline analyses text outputs",
    ),
]


@pytest.fixture(scope="module")
def eee_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("eee") / "eee.duckdb"
    summary = ingest_paths([EEE], db=db)
    assert (summary.runs, summary.predictions, summary.failures, summary.infra_errors) == (4, 26, 21, 0)
    assert reader_skips(summary) == sorted(SKIPPED)
    return db


def _raw_counts(path):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return len(rows), sum(r["evaluation"]["is_correct"] for r in rows)


@pytest.mark.parametrize("path", [EEE, DEMO, DEMO_AGG, DEMO_SAMPLES, MMLU_GPT2, HELM_CONVERTED])
def test_recognised_by_content(path):
    assert [r.name for r in choose(path)] == ["eee"]


def test_runs_models_datasets_and_verdicts(eee_db):
    assert q(
        eee_db,
        "SELECT model, dataset, domain, count(*), count(*) FILTER (WHERE is_correct), "
        "count(*) FILTER (WHERE NOT is_correct) FROM outcomes GROUP BY ALL ORDER BY 2",
    ) == RUNS


@pytest.mark.parametrize("path", sorted(HELM_CONVERTED.glob("*.jsonl")) + [DEMO_SAMPLES], ids=lambda p: p.name)
def test_verdicts_are_the_files_is_correct(eee_db, path):
    n, passed = _raw_counts(path)
    assert q(
        eee_db,
        "SELECT count(*), count(*) FILTER (WHERE o.is_correct) FROM outcomes o JOIN runs r USING (run_id) WHERE r.source_path = ?",
        [str(path.resolve())],
    ) == [(n, passed)]


def test_instance_fields(eee_db):
    row = q(
        eee_db,
        "SELECT i.instance_id, i.raw_instance_id, i.input_text, i.refs, i.choices, p.output_text, p.mapped_output, "
        "p.score, p.is_correct, i.question_hash IS NOT NULL FROM instances i JOIN predictions p USING (run_id, instance_id) "
        "JOIN runs r USING (run_id) WHERE r.dataset = 'mmlu' AND i.instance_id = 'id147'",
    )[0]
    assert row[:2] == ("id147", "id147")
    assert row[2].endswith("What does the notion of “meaning in life” refer to?\nA. external meaning\nB. god's plan\nC. internalmeaning\nD. meaning in an afterlife\nAnswer:")
    assert json.loads(row[3]) == [{"text": "internalmeaning", "correct": True}]
    assert json.loads(row[4]) == {"A": "external meaning", "B": "god's plan", "C": "internalmeaning", "D": "meaning in an afterlife"}
    assert row[5:] == (" D", "meaning in an afterlife", 0.0, False, True)


def test_aggregate_is_kept_as_the_harness_number(eee_db):
    # the 0.3.0 reference demo's aggregate says 0.75 over a samples file of one correct answer:
    # no pass rate over one sample, so it counts samples the file does not hold (its total_rows
    # counts the file's lines, not the aggregate's samples)
    assert q(
        eee_db,
        "SELECT harness_metric, harness_split, harness_value, harness_n, harness_agrees, harness_note, settings "
        "FROM runs WHERE dataset = 'demo-source.demo_bench'",
    ) == [(
        "accuracy", None, 0.75, None, None,
        "not compared: the log's 0.75 (accuracy) is no pass rate over the 1 scored sample(s) it holds, "
        "so it counts samples the log does not have",
        json.dumps({"evaluation_id": "demo-source/demo-org_demo-model/1750000000", "schema_version": "0.3.0",
                    "eval_library": "unknown", "eval_library_version": "unknown", "source_name": "<Platform>",
                    "metric": "accuracy"},
                   separators=(",", ":")),
    )]
    # the HELM-converted files come without an aggregate
    assert q(eee_db, "SELECT count(*) FROM runs WHERE harness_value IS NULL") == [(3,)]


def test_ids_are_qualified_with_the_domain(eee_db):
    assert q(eee_db, "SELECT instance_id, raw_instance_id, split FROM instances i JOIN runs r USING (run_id) WHERE r.domain IS NOT NULL") == [
        ("arithmetic/demo_0001", "demo_0001", None)
    ]


def test_samples_file_alone_finds_its_aggregate(tmp_db):
    summary = ingest_paths([DEMO_SAMPLES], db=tmp_db)
    assert summary.runs == 1
    assert q(tmp_db, "SELECT harness_value FROM runs") == [(0.75,)]


def test_aggregate_alone_is_skipped_with_its_reason(tmp_db):
    # a load that skipped everything stored nothing: it fails, with the reason
    aggregate = AGGREGATES / "98ea850e-7019-4728-a558-8b1819ec47c2.json"
    with pytest.raises(IngestError) as caught:
        ingest_paths([aggregate], db=tmp_db)
    assert caught.value.message == ("nothing loaded: every log found was skipped\nskipped 1 file:\n"
                                    f"  aggregate scores only, no instance-level samples (1): {aggregate}")


def test_reingest_replaces(tmp_db):
    ingest_paths([HELM_CONVERTED], db=tmp_db)
    ingest_paths([HELM_CONVERTED], db=tmp_db)
    assert q(tmp_db, "SELECT count(*), count(DISTINCT run_id) FROM runs") == [(3, 3)]
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(25,)]


def _copy(src, tmp_path):
    target = tmp_path / "logs" / src.name
    target.parent.mkdir(parents=True)
    shutil.copy(src, target)
    target.chmod(0o644)
    return target


@pytest.mark.parametrize(
    "src, damage, message",
    [
        (MMLU_GPT2, lambda t: t[: len(t) - 40], r"mmlu__openai_gpt2__None_samples.jsonl:10:\d+: truncated JSON line"),
        (MMLU_GPT2, lambda t: t.replace('"is_correct": false', '"is_correct": "no"', 1), r"samples.jsonl:1: evaluation.is_correct: Input should be a valid boolean"),
        (MMLU_GPT2, lambda t: t.replace('"sample_id": "id147", ', "", 1), r"samples.jsonl:1: sample_id: Field required"),
        (MMLU_GPT2, lambda t: "[1, 2]\n" + t, r"samples.jsonl:1: expected a JSON object, found list"),
        (DEMO_AGG, lambda t: t[:300], r"f3a1c0de-4b2e-4c1a-9f6d-1b7e5a2c8d40.json:9:33: invalid JSON: Unterminated string"),
    ],
    ids=["truncated", "wrong-type", "missing-field", "not-an-object", "truncated-aggregate"],
)
def test_damaged_files_are_refused_and_nothing_is_written(tmp_path, src, damage, message):
    import re

    target = _copy(src, tmp_path)
    if src == DEMO_AGG:
        _copy(DEMO_SAMPLES, tmp_path / "x").replace(target.parent / DEMO_SAMPLES.name)
    target.write_text(damage(target.read_text()))
    db = tmp_path / "store.duckdb"
    with pytest.raises(IngestError) as err:
        ingest_paths([target], db=db, fmt="eee")
    assert str(target.parent) in err.value.message
    assert re.search(message, err.value.message), err.value.message
    assert not db.exists()


def test_cli_summary_names_what_it_skipped(tmp_db):
    r = run_module("ingest", EEE, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1].startswith("ingested 4 runs, 26 predictions, 21 failures in ")
    for path, reason in SKIPPED:
        assert any(line.startswith(f"  {reason} (") and path in line for line in lines), (reason, r.stdout)


def test_whole_fixture_tree_reads_every_format(tmp_path):
    """Every format under ../shared/fixtures is read; only what cannot be analysed is skipped,
    and the summary names it."""
    db = tmp_path / "all.duckdb"
    summary = ingest_paths([FIXTURES], db=db)
    formats = q(db, "SELECT source_format, count(*), sum(n_predictions) FROM runs GROUP BY 1 ORDER BY 1")
    assert [f for f, _, _ in formats] == ["eee", "helm", "inspect", "lm-eval", "openai-evals", "openhands", "promptfoo"]
    assert dict((f, (n, p)) for f, n, p in formats)["eee"] == (4, 26)
    assert dict((f, (n, p)) for f, n, p in formats)["openai-evals"] == (2, 305)
    assert dict((f, (n, p)) for f, n, p in formats)["promptfoo"] == (2, 4)
    agents = FIXTURES / "agents"
    no_model = [  # agent logs that name no model: skipped, each with the flag to give
        (str(agents / "atif" / "openhands_hello-world.trajectory.json"), "ATIF trajectory names no model (agent.model_name): pass --model NAME"),
        (str(agents / "atif" / "terminus_2_hello-world-context-summarization-linear-history.trajectory.json"),
         "ATIF trajectory names no dataset (no Harbor result.json beside it): pass --dataset NAME"),
        (str(agents / "swe-agent"), "SWE-agent trajectories name no model (no replay_config, no args.yaml beside them): pass --model NAME"),
        (str(agents / "tau-bench" / "gpt-4o-airline.json"), "tau-bench results name no model (only its file name can, and this one "
         "does not follow tau-bench's pattern): pass --model NAME"),
        (str(agents / "who-when-algorithm-generated"), "Who&When logs name no model: pass --model NAME"),
        # Inspect's own test log names its model and task "...": a placeholder, not a name
        (str(agents / "inspect-tool-call-error" / "log_tool_call_error.json"),
         "eval.model is '...', a placeholder, not a name; eval.task is '...', a placeholder, not a name "
         "(pass --model NAME and --dataset NAME)"),
    ]
    assert reader_skips(summary) == sorted(SKIPPED + no_model)
    assert summary.runs == sum(n for _, n, _ in formats)
