"""HELM ingest against the real suites in ../shared/fixtures/helm."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import MMLU_SUITE, SAFETY, STATE_ONLY, q, requires_fixtures
from ingest import IngestError, PassConfig, ReadOptions, ingest_paths
from ingest.options import read_config

pytestmark = requires_fixtures  # reads the shared real logs


def helm_accuracy_by_split(run_dir: Path, metric: str = "exact_match") -> dict[str, float]:
    stats = json.loads((run_dir / "stats.json").read_text())
    return {
        s["name"]["split"]: s["mean"]
        for s in stats
        if s["name"]["name"] == metric and "perturbation" not in s["name"] and s.get("count")
    }


def test_mmlu_suite_fills_outcomes_with_1000_rows(mmlu_db):
    assert q(mmlu_db, "SELECT count(*) FROM outcomes") == [(1000,)]
    per_model = q(mmlu_db, "SELECT model, count(*), count(DISTINCT (dataset, instance_id)) FROM outcomes GROUP BY model ORDER BY model")
    assert per_model == [
        ("groq/llama3-70b-8192", 200, 200),
        ("groq/llama3-8b-8192", 200, 200),
        ("huggingface/Meta-Llama-3-8B", 200, 200),
        ("together/Llama-3-70b-chat-hf", 200, 200),
        ("together/Llama-3-8b-chat-hf", 200, 200),
    ]
    # the same 200 questions for every model, so every question pairs across all five
    assert q(mmlu_db, "SELECT count(*) FROM (SELECT dataset, instance_id FROM outcomes GROUP BY ALL HAVING count(DISTINCT model) = 5)") == [(200,)]
    assert q(mmlu_db, "SELECT DISTINCT dataset, source_format FROM outcomes") == [("mmlu", "helm")]
    assert q(mmlu_db, "SELECT count(DISTINCT domain) FROM outcomes") == [(10,)]


def test_every_mmlu_run_matches_helm_accuracy_per_split(mmlu_db):
    run_dirs = sorted(p for p in MMLU_SUITE.iterdir() if (p / "run_spec.json").is_file())
    assert len(run_dirs) == 50
    checked = 0
    for run_dir in run_dirs:
        name = json.loads((run_dir / "run_spec.json").read_text())["name"]
        ours = dict(
            q(
                mmlu_db,
                "SELECT o.split, avg(o.is_correct::INT) FROM outcomes o JOIN runs r USING (run_id) "
                "WHERE r.run_name = ? GROUP BY o.split",
                [name],
            )
        )
        helm = helm_accuracy_by_split(run_dir)
        assert set(ours) == set(helm), name
        for split, value in helm.items():
            assert ours[split] == pytest.approx(value, abs=1e-12), (name, split)
            checked += 1
    assert checked >= 50


def test_helm_ids_are_qualified_by_subject_and_raw_id_kept(mmlu_db):
    # id12-like collisions: the same raw id names different questions in different subjects
    rows = q(
        mmlu_db,
        "SELECT raw_instance_id, count(DISTINCT instance_id) AS n FROM outcomes GROUP BY 1 HAVING n > 1 ORDER BY n DESC LIMIT 1",
    )
    assert rows and rows[0][1] > 1
    raw, _ = rows[0]
    ids = {r[0] for r in q(mmlu_db, "SELECT DISTINCT instance_id FROM outcomes WHERE raw_instance_id = ?", [raw])}
    assert all(i.endswith("/" + raw) for i in ids)
    assert q(mmlu_db, "SELECT instance_id, domain FROM outcomes WHERE instance_id = 'anatomy/id138' LIMIT 1") == [
        ("anatomy/id138", "anatomy")
    ]


def test_mmlu_run_metadata_from_suite_schema(mmlu_db):
    rows = q(
        mmlu_db,
        "SELECT DISTINCT main_metric, main_metric_source, pass_threshold, model_deployment IS NOT NULL, "
        "json_extract_string(model_metadata, '$.display_name') IS NOT NULL, suite FROM runs",
    )
    assert rows == [("exact_match", "schema", 0.7, True, True, "v1")]


def test_mapped_output_absent_and_empty_completion_are_kept(mmlu_db):
    # the suite's real quirk: answers that are not an option letter have no mapped_output
    unmapped = q(mmlu_db, "SELECT count(*) FROM predictions WHERE mapped_output IS NULL")[0][0]
    assert unmapped > 0
    assert q(mmlu_db, "SELECT mapped_output FROM predictions WHERE output_text = '<ACTION></ACTION>'") == [(None,)]
    # choices and references: the gold answer is tagged correct
    refs, choices = q(mmlu_db, "SELECT refs, choices FROM instances WHERE instance_id = 'anatomy/id138' LIMIT 1")[0]
    refs, choices = json.loads(refs), json.loads(choices)
    assert [r["text"] for r in refs if r["correct"]] == ["The cerebellum"]
    assert choices["D"] == "The cerebellum"


def test_scenario_state_only_runs(tmp_db):
    summary = ingest_paths([STATE_ONLY], db=tmp_db)
    assert (summary.runs, summary.predictions) == (3, 25)
    counts = q(tmp_db, "SELECT dataset, model, count(*) FROM outcomes GROUP BY ALL ORDER BY ALL")
    assert counts == [("hellaswag", "eleutherai/pythia-1b-v0", 10), ("mmlu", "openai/gpt2", 10), ("narrative_qa", "openai/gpt2", 5)]
    for run_dir in sorted(p for p in STATE_ONLY.iterdir() if p.is_dir()):
        name = json.loads((run_dir / "run_spec.json").read_text())["name"]
        # folder names rewrite ':' to '-'; the run name comes from run_spec.json
        assert ":" in name and ":" not in run_dir.name
        ours = dict(q(tmp_db, "SELECT o.split, avg(o.is_correct::INT) FROM outcomes o JOIN runs r USING (run_id) WHERE r.run_name = ? GROUP BY 1", [name]))
        for split, value in helm_accuracy_by_split(run_dir).items():
            assert ours[split] == pytest.approx(value), (name, split)
    # letters are mapped back to option text through output_mapping
    mapped = q(tmp_db, "SELECT p.output_text, p.mapped_output, i.choices FROM predictions p JOIN instances i USING (run_id, instance_id) JOIN runs r USING (run_id) WHERE r.dataset = 'hellaswag'")
    for text, mapped_output, choices in mapped:
        assert mapped_output == json.loads(choices).get(text.strip())
    assert q(tmp_db, "SELECT domain FROM runs WHERE dataset = 'mmlu'") == [("philosophy",)]


def test_safety_runs_keep_judge_annotations_and_threshold_continuous_scores(tmp_db):
    summary = ingest_paths([SAFETY], db=tmp_db)
    assert (summary.runs, summary.predictions) == (6, 600)
    expected_failures = 0
    for run_dir in SAFETY.iterdir():
        for p in json.loads((run_dir / "display_predictions.json").read_text()):
            score = p["stats"].get("sst_score", p["stats"].get("xst_score"))
            expected_failures += score < 0.7
    assert expected_failures == 29
    assert summary.failures == 29
    assert q(tmp_db, "SELECT DISTINCT main_metric FROM runs ORDER BY 1") == [("sst_score",), ("xst_score",)]
    # a 0.75 judge score passes, 0.5 fails
    assert q(tmp_db, "SELECT DISTINCT is_correct FROM predictions WHERE score = 0.75") == [(True,)]
    assert q(tmp_db, "SELECT DISTINCT is_correct FROM predictions WHERE score = 0.5") == [(False,)]
    ann = q(tmp_db, "SELECT annotations FROM predictions WHERE annotations IS NOT NULL LIMIT 1")[0][0]
    judge = next(iter(json.loads(ann).values()))
    assert {"gpt_score", "claude_score", "gpt_reasoning", "claude_reasoning"} <= set(judge)
    models = {r[0] for r in q(tmp_db, "SELECT DISTINCT model FROM outcomes")}
    assert models == {
        "openai/gpt-4o-2024-05-13",
        "anthropic/claude-3-5-sonnet-20240620",
        "meta/llama-3-8b-chat",
        "mistralai/mixtral-8x22b-instruct-v0.1",
    }


def test_reingest_replaces_never_duplicates(tmp_db):
    ingest_paths([SAFETY], db=tmp_db)
    first = q(tmp_db, "SELECT count(*), sum(is_correct::INT) FROM outcomes")
    ingest_paths([SAFETY], db=tmp_db)
    ingest_paths([SAFETY / "xstest:model=meta_llama-3-8b-chat"], db=tmp_db)
    assert q(tmp_db, "SELECT count(*), sum(is_correct::INT) FROM outcomes") == first == [(600, 571)]
    assert q(tmp_db, "SELECT count(*) FROM runs") == [(6,)]
    assert q(tmp_db, "SELECT count(*) FROM instances") == [(600,)]


def _copy_run(src: Path, dest_root: Path) -> Path:
    dest = dest_root / "suite" / src.name
    shutil.copytree(src, dest)
    for f in dest.iterdir():
        f.chmod(0o644)
    return dest


def test_pre_0_4_run_without_model_deployment(tmp_path, tmp_db):
    run = _copy_run(STATE_ONLY / "mmlu-subject=philosophy,method=multiple_choice_joint,model=openai_gpt2", tmp_path)
    spec = json.loads((run / "run_spec.json").read_text())
    del spec["adapter_spec"]["model_deployment"]
    (run / "run_spec.json").write_text(json.dumps(spec))
    ingest_paths([run], db=tmp_db)
    assert q(tmp_db, "SELECT model, model_deployment FROM runs") == [("openai/gpt2", None)]
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(10,)]


def test_perturbed_instances_are_keyed_by_perturbation(tmp_path, tmp_db):
    run = _copy_run(MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192", tmp_path)
    pert = {"name": "typo", "robustness": True, "fairness": False, "prob": 0.1}
    for fname in ("instances.json", "display_predictions.json", "per_instance_stats.json"):
        rows = json.loads((run / fname).read_text())
        extra = []
        for r in rows:
            r2 = json.loads(json.dumps(r))
            r2["perturbation"] = pert
            if fname == "per_instance_stats.json":
                for s in r2["stats"]:
                    s["name"]["perturbation"] = pert
                    if s["name"]["name"] == "exact_match":
                        s["mean"] = 1 - s["mean"]
            if fname == "display_predictions.json":
                r2["stats"]["exact_match"] = 1 - r2["stats"]["exact_match"]
            extra.append(r2)
        (run / fname).write_text(json.dumps(rows + extra))
    ingest_paths([run], db=tmp_db)
    assert q(tmp_db, "SELECT count(*), count(DISTINCT instance_id) FROM outcomes") == [(40, 40)]
    rows = q(tmp_db, "SELECT perturbation, instance_id, is_correct FROM outcomes WHERE raw_instance_id = 'id138' ORDER BY 1 NULLS FIRST")
    assert rows == [(None, "anatomy/id138", False), ("typo", "anatomy/id138@typo", True)]


def test_configured_threshold_and_metric(tmp_db):
    narrative = STATE_ONLY / "narrative_qa-model=openai_gpt2"
    options = ReadOptions(pass_config=PassConfig.build(["narrativeqa=0.3"], ["narrativeqa=f1_score"]))
    ingest_paths([narrative], db=tmp_db, options=options)
    # f1 scores in the fixture: 0, 1/3, 0, 0, 4/11 → two reach 0.3
    assert q(tmp_db, "SELECT main_metric, main_metric_source, pass_threshold FROM runs") == [("f1_score", "config", 0.3)]
    assert q(tmp_db, "SELECT sum(is_correct::INT), count(*) FROM outcomes") == [(2, 5)]


def test_config_file_and_lower_is_better(tmp_path, tmp_db):
    cfg = tmp_path / "faultline.yaml"
    cfg.write_text("datasets:\n  narrativeqa:\n    main_metric: num_output_tokens\n    scale: [0, 200]\n")
    narrative = STATE_ONLY / "narrative_qa-model=openai_gpt2"
    ingest_paths([narrative], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(config_file=read_config(cfg))))
    (metric, max_value, lower, threshold, source, headline, agrees, note), = q(
        tmp_db, "SELECT main_metric, metric_max, lower_is_better, pass_threshold, scale_source, headline_metric, "
                "harness_agrees, harness_note FROM runs")
    assert (metric, max_value, lower, threshold, source) == ("num_output_tokens", 200.0, False, 140.0, "config")
    scores = [r[0] for r in q(tmp_db, "SELECT score FROM predictions")]
    assert all(s is not None for s in scores)
    # judged on another metric than HELM's headline for narrative_qa: a difference, whatever the numbers
    assert (headline, agrees) == ("f1_score", False)
    assert note.startswith("differs: judged on num_output_tokens, but the harness's headline is f1_score (0.174242)")
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [1, 2]\n")
    with pytest.raises(IngestError, match="bad.yaml"):
        PassConfig.build(config_file=read_config(bad))


def test_run_folder_suite_folder_and_benchmark_output_are_all_accepted(tmp_db):
    one = MMLU_SUITE / "mmlu:subject=virology,method=multiple_choice_joint,model=groq_llama3-8b-8192"
    assert ingest_paths([one], db=tmp_db).predictions == 20
    # `benchmark_output/` holds runs/<suite>/<run>
    assert ingest_paths([MMLU_SUITE.parent.parent], db=tmp_db).runs == 50
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(1000,)]


def test_helm_domains_and_datasets(tmp_db):
    ingest_paths([SAFETY, STATE_ONLY], db=tmp_db)
    rows = q(tmp_db, "SELECT DISTINCT dataset, domain FROM runs ORDER BY 1")
    # canonical names follow HELM's run groups; the scenario's own name stays in dataset_raw
    assert rows == [
        ("hellaswag", None),
        ("mmlu", "philosophy"),
        ("narrative_qa", None),
        ("simple_safety_tests", None),
        ("xstest", None),
    ]
    assert q(tmp_db, "SELECT DISTINCT dataset, dataset_raw FROM runs WHERE dataset <> dataset_raw ORDER BY 1") == [
        ("narrative_qa", "narrativeqa"), ("simple_safety_tests", "SimpleSafetyTests"), ("xstest", "XSTest"),
    ]
    splits = Counter(r[0] for r in q(tmp_db, "SELECT split FROM outcomes"))
    assert sum(splits.values()) == 625


def test_failed_requests_are_infrastructure_errors_not_model_failures(tmp_path, tmp_db):
    run = _copy_run(MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192", tmp_path)
    state = json.loads((run / "scenario_state.json").read_text())
    target = state["request_states"][0]
    target["result"] = {"success": False, "error": "429 Too Many Requests", "completions": [], "embedding": [], "cached": False}
    (run / "scenario_state.json").write_text(json.dumps(state))
    # HELM could not score it either: no stats for the instance
    raw_id = target["instance"]["id"]
    stats = json.loads((run / "per_instance_stats.json").read_text())
    (run / "per_instance_stats.json").write_text(json.dumps([e for e in stats if e["instance_id"] != raw_id]))
    shown = json.loads((run / "display_predictions.json").read_text())
    for pred in shown:
        if pred["instance_id"] == raw_id:
            pred["stats"] = {}
    (run / "display_predictions.json").write_text(json.dumps(shown))
    summary = ingest_paths([run], db=tmp_db)
    assert (summary.predictions, summary.infra_errors) == (20, 1)
    raw_id = target["instance"]["id"]
    assert q(tmp_db, "SELECT infra_error, is_correct, error_message FROM predictions WHERE instance_id = ?", [f"anatomy/{raw_id}"]) == [
        (True, None, "429 Too Many Requests")
    ]
    assert q(tmp_db, "SELECT n_infra_errors, n_failures + (SELECT count(*) FROM predictions WHERE is_correct) FROM runs") == [(1, 19)]


def test_a_folder_of_mixed_logs_ingests_every_format_in_it(tmp_db):
    from conftest import FIXTURES

    # fixtures/ holds HELM suites at several depths, lm-eval output and Inspect logs
    summary = ingest_paths([FIXTURES / "helm", FIXTURES / "lm-eval"], db=tmp_db)
    helm_runs = sum(1 for _ in (FIXTURES / "helm").rglob("run_spec.json"))
    assert helm_runs == 59
    formats = dict(q(tmp_db, "SELECT source_format, count(*) FROM runs GROUP BY 1"))
    assert formats["helm"] == 59
    assert formats["lm-eval"] == 6
    assert q(tmp_db, "SELECT count(*) FROM outcomes WHERE source_format = 'helm'") == [(1625,)]
    assert summary.runs == sum(formats.values())


@pytest.mark.parametrize(
    "file, damage, message",
    [
        ("per_instance_stats.json", lambda rows: rows[3].update(train_trial_index="x"),
         r"per_instance_stats.json: entry 3: not a HELM per-instance stats entry \(train_trial_index 'x' is not an integer\)"),
        ("per_instance_stats.json", lambda rows: rows[3].pop("stats"), r"per_instance_stats.json: entry 3: .*missing 'stats'"),
        ("per_instance_stats.json", lambda rows: rows.__setitem__(3, 5), r"per_instance_stats.json: entry 3: not a HELM"),
        ("instances.json", lambda rows: rows[0].update(references=["not a reference"]), r"not a well-formed HELM run"),
        ("instances.json", lambda rows: rows[0].update(input="just text"), r"not a well-formed HELM run"),
    ],
)
def test_malformed_helm_shapes_are_clear_errors(tmp_path, tmp_db, file, damage, message):
    run = _copy_run(MMLU_SUITE / "mmlu:subject=virology,method=multiple_choice_joint,model=groq_llama3-8b-8192", tmp_path)
    rows = json.loads((run / file).read_text())
    damage(rows)
    (run / file).write_text(json.dumps(rows))
    with pytest.raises(IngestError, match=message):
        ingest_paths([run], db=tmp_db)
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]
