"""HELM verdicts on the harness's headline: MedHELM-like 1–5 jury scores, suites without a
schema.json (HELM's own schema table decides), runs judged on another metric than the headline,
incomplete and empty runs, requests the provider blocked that HELM still scored, and a suite's
own files never reported as skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, MMLU_SUITE, q, requires_fixtures, run_module
from helm_gen import Case, Run, write_run, write_schema
from ingest import IngestError, PassConfig, ReadOptions, ingest_paths
from ingest.options import read_config
from ingest.sources.helm import table as helm_table

JURY = "aci_bench_accuracy"
# means of three jurors' 1–5 ratings; model a answers well half the time, model b never
JURY_SCORES = {
    "org/model-a": [1.0, 7 / 3, 11 / 3, 4.0, 14 / 3, 5.0],
    "org/model-b": [5 / 3, 1.0, 2.0, 3.0, 10 / 3, 4 / 3],
}
RULE = ('pass when aci_bench_accuracy ≥ 3.8, fail below (0.7 of the way up its 1–5 scale, from the HELM '
        'display name "ACI-Bench Jury Score" (LLM jury ratings 1–5))')


def _jury_suite(root: Path, schema: bool, metric: str = JURY, metric_specs: list | None = None, group: str = "aci_bench") -> Path:
    suite = root / "benchmark_output" / "runs" / "medhelm"
    for model, scores in JURY_SCORES.items():
        # MedHELM's jury runs also report BERTScore and the like, not exact_match
        cases = [Case(f"id{n}", f"Write the note for visit {n}.", f"note {n}", {metric: s, "BERTScore-F": 0.5})
                 for n, s in enumerate(scores)]
        write_run(suite, Run(group, model, [group], cases, metric_specs=metric_specs or []))
    if schema:
        write_schema(suite, {group: (metric, "test")}, {metric: "ACI-Bench Jury Score"})
    return suite


@pytest.mark.parametrize("schema", [True, False], ids=["schema.json", "helm table"])
def test_jury_scores_fail_below_3_8_on_their_1_to_5_scale(tmp_path, tmp_db, schema):
    suite = _jury_suite(tmp_path, schema)
    summary = ingest_paths([suite], db=tmp_db)
    # the failures are exactly the predictions below 0.7 of the 1–5 range
    assert q(tmp_db, "SELECT model, count(*) FILTER (WHERE NOT is_correct), count(*) FILTER (WHERE is_correct), "
                     "count(*) FILTER (WHERE is_correct <> (score >= 3.8)) FROM outcomes GROUP BY 1 ORDER BY 1") == [
        ("org/model-a", 3, 3, 0), ("org/model-b", 6, 0, 0),
    ]
    source = "schema" if schema else "helm schema table"
    assert q(tmp_db, "SELECT DISTINCT main_metric, main_metric_source, metric_min, metric_max, pass_threshold, "
                     "scale_source, headline_metric, verdict_rule FROM runs") == [
        (JURY, source, 1.0, 5.0, 3.8, "helm display name", JURY, RULE),
    ]
    # the harness check compares the mean jury score with HELM's own
    notes = dict(q(tmp_db, "SELECT model, harness_note FROM runs"))
    assert notes["org/model-a"].startswith("agrees: mean 3.44444 over 6 (aci_bench_accuracy, split test)")
    assert notes["org/model-b"].startswith("agrees: mean 2.05556 over 6 (aci_bench_accuracy, split test)")
    details = summary.details()
    assert f"  aci_bench: {RULE} [2 runs]; change with --pass-threshold aci_bench=X" in details
    # model b fails everything while its scores vary: worth a warning naming the rule
    warning = details.index("warning: 0% or 100% of predictions fail while their scores vary:")
    assert details[warning + 1] == (
        f"  org/model-b on aci_bench: all 6 predictions fail although their scores vary (1–3.33333); the rule: {RULE}. "
        "If that is wrong for these scores, set --scale aci_bench=LOW:HIGH or --pass-threshold aci_bench=X"
    )
    assert len(details) == warning + 2


def test_an_unknown_accuracy_named_metric_on_1_to_5_is_never_binary(tmp_path, tmp_db):
    # a group and metric no schema names: `*_accuracy` suggests 0/1, which its 1–5 values contradict
    suite = _jury_suite(tmp_path / "a", schema=False, metric="new_clinic_accuracy", group="new_clinic")
    with pytest.raises(IngestError) as err:
        ingest_paths([suite], db=tmp_db)
    assert str(err.value) == (
        "no verdicts without a scale, and Faultline does not guess one:\n"
        f"  new_clinic: new_clinic_accuracy (2 logs, e.g. {suite.resolve()}/new_clinic:model=org_model-a): its scores "
        "run 1–5, outside every scale the evidence gives: 0–1 from the name new_clinic_accuracy (accuracy-like names "
        "are 0/1) (a score of 5 lies outside it). Give its scale with --scale new_clinic=LOW:HIGH (the lowest and "
        "highest score possible), or the line itself with --pass-threshold new_clinic=X"
    )
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]
    # the run's own metric spec says it is an LLM jury's score: 1–5
    jury = [{"class_name": "helm.benchmark.metrics.llm_jury_metrics.LLMJuryMetric",
             "args": {"metric_name": "new_clinic_accuracy", "scenario_name": "aci_bench", "default_score": 1.0}}]
    suite = _jury_suite(tmp_path / "b", schema=False, metric="new_clinic_accuracy", metric_specs=jury, group="new_clinic")
    ingest_paths([suite], db=tmp_db)
    assert q(tmp_db, "SELECT DISTINCT main_metric, main_metric_source, pass_threshold, scale_source FROM runs") == [
        ("new_clinic_accuracy", "helm jury metric", 3.8, "helm jury metric"),
    ]
    assert q(tmp_db, "SELECT count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(9,)]


GENERATION = {
    # run group: (scenario, metric HELM Lite's headline uses, its value per instance, main split)
    "narrative_qa": ("narrativeqa", "f1_score", [0.32, 0.9, 0.0, 0.75], "test"),
    "natural_qa_closedbook": ("natural_qa", "f1_score", [0.5, 0.71, 0.2, 1.0], "valid"),
    "wmt_14": ("wmt_14", "bleu_4", [0.18, 0.25, 0.72, 0.05], "test"),
    "legalbench": ("legalbench", "quasi_exact_match", [1.0, 1.0, 0.0, 1.0], "test"),
    "med_qa": ("med_qa", "quasi_exact_match", [1.0, 0.0, 1.0, 1.0], "test"),
}


def test_a_suite_without_schema_json_is_judged_on_helms_own_headlines(tmp_path, tmp_db):
    suite = tmp_path / "runs" / "lite"
    for group, (scenario, metric, values, split) in GENERATION.items():
        cases = [Case(f"id{n}", f"q{n}", f"answer {n}", {metric: v, "exact_match": 0.0}, split=split)
                 for n, v in enumerate(values)]
        write_run(suite, Run(scenario, "org/m", [group], cases))
    summary = ingest_paths([suite], db=tmp_db)
    rows = q(tmp_db, "SELECT dataset, main_metric, main_metric_source, main_split, headline_metric, harness_agrees, "
                     "harness_note FROM runs ORDER BY 1")
    assert [r[:6] for r in rows] == [
        ("legalbench", "quasi_exact_match", "helm schema table", "test", "quasi_exact_match", True),
        ("med_qa", "quasi_exact_match", "helm schema table", "test", "quasi_exact_match", True),
        ("narrative_qa", "f1_score", "helm schema table", "test", "f1_score", True),
        ("natural_qa", "f1_score", "helm schema table", "valid", "f1_score", True),
        ("wmt_14", "bleu_4", "helm schema table", "test", "bleu_4", True),
    ]
    assert rows[2][6] == ("agrees: mean 0.4925 over 4 (f1_score, split test); headline f1_score of group "
                          "narrative_qa from HELM's classic, lite schemas")
    # not exact_match, on which every generation would fail: F1 ≥ 0.7 and BLEU-4 ≥ 0.7 pass
    assert q(tmp_db, "SELECT dataset, list(score ORDER BY instance_id), list(is_correct ORDER BY instance_id) "
                     "FROM outcomes GROUP BY 1 ORDER BY 1") == [
        ("legalbench", [1.0, 1.0, 0.0, 1.0], [True, True, False, True]),
        ("med_qa", [1.0, 0.0, 1.0, 1.0], [True, False, True, True]),
        ("narrative_qa", [0.32, 0.9, 0.0, 0.75], [False, True, False, True]),
        ("natural_qa", [0.5, 0.71, 0.2, 1.0], [False, True, False, True]),
        ("wmt_14", [0.18, 0.25, 0.72, 0.05], [False, False, True, False]),
    ]
    assert "harness check: 5 of 5 runs agree with the harness's own headline" in summary.details()


def test_helm_table_names_its_source_and_keeps_earlier_headlines():
    assert helm_table.version() == "v0.5.16-54-g63754d05d (2026-06-05)"
    assert [(h.metric, h.split) for h in helm_table.headlines("narrative_qa")] == [("f1_score", "test")]
    # HELM Safety's first schema named sst_score; runs from then report no safety_score
    assert [h.metric for h in helm_table.headlines("simple_safety_tests")] == ["safety_score", "sst_score"]
    assert helm_table.metric(JURY) == {"display_name": "ACI-Bench Jury Score", "short_display_name": "Jury Score",
                                       "lower_is_better": False}


@pytest.fixture(scope="module")
def mmlu_without_schema(tmp_path_factory) -> Path:
    if not MMLU_SUITE.is_dir():
        pytest.skip("needs the shared real logs")
    suite = tmp_path_factory.mktemp("noschema") / "v1"
    shutil.copytree(MMLU_SUITE, suite)
    (suite / "schema.json").unlink()
    return suite


@requires_fixtures
def test_shared_mmlu_suite_without_its_schema_json_gets_the_same_verdicts(mmlu_without_schema, tmp_path):
    with_schema, without = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    ingest_paths([MMLU_SUITE], db=with_schema)
    ingest_paths([mmlu_without_schema], db=without)
    sql = ("SELECT run_name, instance_id, score, is_correct FROM outcomes JOIN runs USING (run_id) ORDER BY 1, 2")
    assert q(with_schema, sql) == q(without, sql)
    assert q(without, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(1000, 532)]
    assert q(without, "SELECT main_metric, main_metric_source, main_split, headline_metric, count(*), "
                      "count(*) FILTER (WHERE harness_agrees) FROM runs GROUP BY ALL") == [
        ("exact_match", "helm schema table", "test", "exact_match", 50, 50),
    ]


@requires_fixtures
def test_strict_fails_on_a_suite_judged_on_another_metric_than_its_headline(tmp_db):
    r = run_module("ingest", MMLU_SUITE, "--db", tmp_db, "--strict", "--main-metric", "mmlu=quasi_exact_match")
    assert r.returncode == 2
    assert "--strict: 50 run(s) differ from the harness's own headline" in r.stderr
    assert ("  mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192 (groq/llama3-8b-8192): "
            "differs: judged on quasi_exact_match, but the harness's headline is exact_match (0.368421)") in r.stdout.splitlines()
    assert q(tmp_db, "SELECT count(*) FILTER (WHERE NOT harness_agrees), count(*) FILTER (WHERE main_metric <> headline_metric) "
                     "FROM runs") == [(50, 50)]


@requires_fixtures
@pytest.mark.parametrize("folder", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()) if FIXTURES.is_dir() else [])
def test_strict_passes_on_every_shared_fixture(folder, tmp_db):
    r = run_module("ingest", FIXTURES / folder, "--db", tmp_db, "--strict")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not any(line.startswith("  ") and ": differs" in line for line in r.stdout.splitlines())


def _run_of_three(suite: Path, name: str) -> Path:
    cases = [Case(f"id{n}", f"q{n}", "x", {"exact_match": float(n % 2)}) for n in range(3)]
    return write_run(suite, Run("toy", f"org/{name}", ["toy"], cases))


def test_incomplete_and_empty_runs_are_skipped_and_named_in_a_folder_refused_when_named(tmp_path, tmp_db):
    suite = tmp_path / "suite"
    _run_of_three(suite, "good")
    incomplete = _run_of_three(suite, "cut")
    for name in ("instances.json", "display_predictions.json"):
        (incomplete / name).unlink()
    empty = _run_of_three(suite, "empty")
    (empty / "display_predictions.json").unlink()
    (empty / "instances.json").unlink()
    (empty / "scenario_state.json").write_text(json.dumps({"request_states": []}))
    r = run_module("ingest", suite, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-4:-1] == [
        "skipped 2 files:",
        f"  empty HELM run: 0 request states (1): {empty}",
        f"  incomplete HELM run: no predictions (neither instances.json + display_predictions.json nor "
        f"scenario_state.json) (1): {incomplete}",
    ]
    assert lines[-1].startswith("ingested 1 runs, 3 predictions, 2 failures")
    for run in (incomplete, empty):
        named = run_module("ingest", run, "--db", tmp_db)
        assert named.returncode == 2 and "Traceback" not in named.stderr
        assert named.stderr.startswith(f"error: {run}: ")


@requires_fixtures
def test_a_request_the_provider_blocked_but_helm_scored_counts_as_helm_counted_it(tmp_path, tmp_db):
    src = MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192"
    run = tmp_path / "suite" / src.name
    shutil.copytree(src, run)
    for f in run.iterdir():
        f.chmod(0o644)
    state = json.loads((run / "scenario_state.json").read_text())
    # id138 is a test question HELM scored exact_match 0 (the model answered C, the gold is D)
    (target,) = [rs for rs in state["request_states"] if rs["instance"]["id"] == "id138"]
    target["result"] = {"success": False, "error": "content filtered by the provider", "completions": []}
    (run / "scenario_state.json").write_text(json.dumps(state))
    summary = ingest_paths([run], db=tmp_db)
    assert (summary.predictions, summary.failures, summary.infra_errors) == (20, 12, 0)
    assert q(tmp_db, "SELECT score, is_correct, infra_error, verdict_note FROM predictions WHERE instance_id = 'anatomy/id138'") == [
        (0.0, False, False, "the request failed (content filtered by the provider), but HELM scored it: counted as HELM counts it"),
    ]
    assert q(tmp_db, "SELECT harness_agrees, harness_note FROM runs") == [
        (True, "agrees: 0.368421 = 7/19 (exact_match, split test); headline exact_match of group mmlu from "
               "HELM's classic, lite, mmlu schemas"),
    ]
    assert f"{run}: 1 failed request(s) HELM scored anyway, counted as HELM counts them (predictions.verdict_note)" in summary.remarks


@requires_fixtures
def test_helm_suite_files_are_part_of_the_suite_and_the_users_own_file_is_named(tmp_path, tmp_db):
    root = tmp_path / "results"
    suite = root / "benchmark_output" / "runs" / "v1"
    shutil.copytree(MMLU_SUITE, suite)
    # what helm-summarize writes beside the runs: groups/<group>.json, groups/json, groups/latex, ...
    for n in range(88):
        (suite / "groups" / ("json" if n % 2 else "latex")).mkdir(parents=True, exist_ok=True)
        (suite / "groups" / ("json" if n % 2 else "latex") / f"group{n}.json").write_text("{}")
    (suite / "costs.json").write_text("{}")
    (root / "benchmark_output" / "scenario_instances").mkdir()
    (root / "benchmark_output" / "scenario_instances" / "mmlu.json").write_text("[]")
    (root / "scores.xlsx").write_bytes(b"PK")
    r = run_module("ingest", root, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-3:-1] == [
        "skipped 1 file:",
        f"  a table of your own: read only when named directly (python -m ingest FILE) (1): {root / 'scores.xlsx'}",
    ]


def test_more_than_20_skipped_files_are_all_listed_in_a_file(tmp_path, tmp_db):
    suite = tmp_path / "logs"
    _run_of_three(suite / "runs" / "s", "good")
    for n in range(25):
        (suite / f"note{n:02}.txt").write_text("x")
    r = run_module("ingest", suite, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    listed = tmp_db.with_name("faultline.skipped.txt")
    lines = r.stdout.splitlines()
    assert lines[-3:-1] == [
        f"skipped 25 files (every one listed in {listed}):",
        f"  format not read (25): {suite / 'note00.txt'}, {suite / 'note01.txt'}, {suite / 'note02.txt'}, … 22 more",
    ]
    assert listed.read_text().splitlines() == [f"format not read\t{suite / f'note{n:02}.txt'}" for n in range(25)]


def test_scale_flags_are_checked(tmp_path):
    with pytest.raises(IngestError, match=r"--scale x=5:1: the lowest score must be below the highest"):
        PassConfig.build(scales=["x=5:1"])
    with pytest.raises(IngestError, match=r"--scale x=1-5: expected DATASET=LOW:HIGH"):
        PassConfig.build(scales=["x=1-5"])
    config = tmp_path / "c.yaml"
    config.write_text("datasets:\n  rated: {scale: [1, 3]}\n")
    assert PassConfig.build(config_file=read_config(config)).for_dataset("rated").scale == (1.0, 3.0)
    assert ReadOptions().pass_config.for_dataset("rated").scale is None


def test_data_page_shows_the_headline_difference_and_the_impossible_rate_warning(tmp_path, tmp_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    ingest_paths([_jury_suite(tmp_path, schema=True)], db=tmp_db)
    other = tmp_path / "other" / "runs" / "s"
    cases = [Case(f"id{n}", f"q{n}", "x", {"exact_match": float(n % 2), "quasi_exact_match": 1.0}) for n in range(4)]
    write_run(other, Run("mmlu", "org/model-c", ["mmlu"], cases, args={"subject": "anatomy"}))
    ingest_paths([other], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(metrics=["mmlu=quasi_exact_match"])))
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning]
    assert warnings[0].startswith("1 run judged on another metric than the harness's headline")
    assert warnings[1].startswith("For these models and datasets 0% or 100% of predictions fail although the scores vary")
    runs = at.dataframe[0].value
    assert runs.loc[runs["model"] == "org/model-c", ["main_metric", "headline_metric", "harness_agrees"]].values.tolist() == [
        ["quasi_exact_match", "exact_match", "no"],
    ]
    impossible = at.dataframe[1].value
    assert impossible[["model", "dataset", "judged", "failed", "score_min", "verdict_rule"]].values.tolist() == [
        ["org/model-b", "aci_bench", 6, 6, 1.0, RULE],
    ]
