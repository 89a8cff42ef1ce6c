"""Verdicts equal the harness's own: HELM stats.json, lm-eval results files and Inspect headers are
recomputed from the samples; a scale comes from evidence the data do not contradict, else the
dataset is refused with the flag to give."""

from __future__ import annotations

import json
import math
import shutil
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES, MMLU_SUITE, q, requires_fixtures, run_module
from ingest import ingest_paths
from core.names import canonical_dataset, question_hash
from ingest.errors import IngestError
from ingest.options import ReadOptions
from ingest.options import read_config
from core.verdicts import PassConfig

LMEVAL = FIXTURES / "lm-eval"
INSPECT = FIXTURES / "inspect"
MASAKHANER = LMEVAL / "lmeval_pr3506_masakhaner_luo_gemma2b"


def _helm_test_exact_match(run_dir: Path) -> float:
    stats = json.loads((run_dir / "stats.json").read_text())
    (mean,) = [
        s["mean"] for s in stats
        if s["name"] == {"name": "exact_match", "split": "test"}
    ]
    return mean


@requires_fixtures
def test_every_mmlu_run_equals_helm_test_exact_match(mmlu_db):
    runs = sorted(p for p in MMLU_SUITE.iterdir() if (p / "run_spec.json").is_file())
    assert len(runs) == 50
    for run_dir in runs:
        name = json.loads((run_dir / "run_spec.json").read_text())["name"]
        ours = q(
            mmlu_db,
            "SELECT r.main_split, avg(o.is_correct::INT), r.harness_value, r.harness_agrees, r.harness_split "
            "FROM outcomes o JOIN runs r USING (run_id) WHERE r.run_name = ? AND o.split = r.main_split GROUP BY ALL",
            [name],
        )
        helm = _helm_test_exact_match(run_dir)
        assert len(ours) == 1, name
        split, rate, harness, agrees, harness_split = ours[0]
        assert (split, harness_split, agrees) == ("test", "test", True), name
        assert rate == pytest.approx(helm, rel=1e-12, abs=1e-12), name
        assert harness == helm
    # anatomy × groq llama3-8b: 7 of 19 test questions right, HELM's 0.3684210526315789
    assert q(
        mmlu_db,
        "SELECT harness_note, harness_n FROM runs WHERE run_name = 'mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192'",
    ) == [("agrees: 0.368421 = 7/19 (exact_match, split test)", 19)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_same_score_same_verdict_whatever_each_runs_maximum(tmp_path, tmp_db):
    # model a never scores above 0.5; model b reaches 1.0: one per-run scale would pass 0.5 for a
    a = _jsonl(tmp_path / "a.jsonl", [
        {"model": "a", "dataset": "qa", "instance_id": str(i), "output": "x", "score": s}
        for i, s in enumerate([0.5, 0.4, 0.2])
    ])
    b = _jsonl(tmp_path / "b.jsonl", [
        {"model": "b", "dataset": "qa", "instance_id": str(i), "output": "x", "score": s}
        for i, s in enumerate([0.5, 1.0, 0.8])
    ])
    options = ReadOptions(pass_config=PassConfig.build(scales=["qa=0:1"]))
    summary = ingest_paths([a, b], db=tmp_db, options=options)
    assert q(tmp_db, "SELECT DISTINCT is_correct FROM outcomes WHERE score = 0.5") == [(False,)]
    assert q(tmp_db, "SELECT model, score, is_correct FROM outcomes ORDER BY 1, 2") == [
        ("a", 0.2, False), ("a", 0.4, False), ("a", 0.5, False),
        ("b", 0.5, False), ("b", 0.8, True), ("b", 1.0, True),
    ]
    assert q(tmp_db, "SELECT DISTINCT metric_min, metric_max, pass_threshold, scale_source FROM runs") == [(0.0, 1.0, 0.7, "config")]
    assert ("  qa: pass when score ≥ 0.7, fail below (0.7 of the way up its 0–1 scale, from --scale 0:1) [2 runs]; "
            "change with --pass-threshold qa=X") in summary.details()


def _ratings(tmp_path: Path) -> Path:
    # averaged human ratings on 1–3, in thirds; no correct column
    return _jsonl(tmp_path / "ratings.jsonl", [
        {"model": m, "dataset": "rated", "instance_id": str(i), "output": "x", "score": s}
        for m, scores in (("a", [1.0, 4 / 3, 2.0, 3.0]), ("b", [5 / 3, 7 / 3, 8 / 3, 3.0]))
        for i, s in enumerate(scores)
    ])


def test_averaged_ratings_are_refused_without_a_scale_never_put_on_0_to_5(tmp_path, tmp_db):
    ratings = _ratings(tmp_path)
    r = run_module("ingest", ratings, "--db", tmp_db)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr == (
        "error: no verdicts without a scale, and Faultline does not guess one:\n"
        f"  rated: score ({ratings}): nothing says what scale it is on (its scores run 1–3; neither the log nor "
        "the registry declares one). Give its scale with --scale rated=LOW:HIGH (the lowest and highest score "
        "possible), or the line itself with --pass-threshold rated=X\n"
    )
    assert not tmp_db.exists() or q(tmp_db, "SELECT count(*) FROM runs") == [(0,)]
    # the flag it names decides: 0.7 of the way up 1–3 is 2.4
    r = run_module("ingest", ratings, "--db", tmp_db, "--scale", "rated=1:3")
    assert r.returncode == 0, r.stderr
    assert q(tmp_db, "SELECT model, round(score, 4), is_correct FROM outcomes ORDER BY 1, 2") == [
        ("a", 1.0, False), ("a", 1.3333, False), ("a", 2.0, False), ("a", 3.0, True),
        ("b", 1.6667, False), ("b", 2.3333, False), ("b", 2.6667, True), ("b", 3.0, True),
    ]
    assert q(tmp_db, "SELECT DISTINCT metric_min, metric_max, pass_threshold, verdict_rule FROM runs") == [
        (1.0, 3.0, 2.4, "pass when score ≥ 2.4, fail below (0.7 of the way up its 1–3 scale, from --scale 1:3)"),
    ]
    # a scale the data contradict is refused too, naming the score outside it
    r = run_module("ingest", ratings, "--db", tmp_db, "--scale", "rated=0:2")
    assert r.returncode == 2
    assert "rated: score" in r.stderr and "your 0–2 from --scale 0:2 (a score of 3 lies outside it)" in r.stderr


def test_pass_threshold_alone_judges_a_dataset_without_a_scale(tmp_path, tmp_db):
    summary = ingest_paths([_ratings(tmp_path)], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(["rated=2"])))
    assert q(tmp_db, "SELECT count(*) FILTER (WHERE is_correct), count(*) FILTER (WHERE NOT is_correct) FROM outcomes") == [(5, 3)]
    assert q(tmp_db, "SELECT DISTINCT metric_max, pass_threshold, scale_source FROM runs") == [(None, 2.0, "config")]
    assert "  rated: pass when score ≥ 2, fail below (--pass-threshold) [2 runs]; change with --pass-threshold rated=X" in summary.details()


def _lmeval_rows(task_rows: list[dict], folder: Path, task: str, results: dict, stamp: str = "2025-01-02T03-04-05.678901") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _jsonl(folder / f"samples_{task}_{stamp}.jsonl", task_rows)
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    return folder


def test_lower_is_better_error_metric_threshold(tmp_path, tmp_db):
    rows = [
        {"doc_id": i, "doc": {"question": f"q{i}"}, "target": "1", "resps": [["2"]], "filtered_resps": ["2"],
         "filter": "none", "metrics": ["mae"], "mae": err}
        for i, err in enumerate([0.5, 2.0, 4.0, 10.0])
    ]
    folder = _lmeval_rows(rows, tmp_path / "m", "regress", {"model_name": "m", "results": {"regress": {"mae,none": 4.125}}})
    # an error metric has no top: nothing decides its scale, so the line must be given
    with pytest.raises(IngestError, match=r"regress: mae \(.*\): nothing says what scale it is on \(its scores run 0.5–10;"):
        ingest_paths([folder], db=tmp_db)
    summary = ingest_paths([folder], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(scales=["regress=0:10"])))
    # 0–10 given: pass when the error is at most 0.3 of the way up, 3
    assert q(tmp_db, "SELECT score, is_correct FROM outcomes ORDER BY 1") == [(0.5, True), (2.0, True), (4.0, False), (10.0, False)]
    assert q(tmp_db, "SELECT lower_is_better, pass_threshold, harness_agrees, harness_note FROM runs") == [
        (True, 3.0, True, "agrees: mean 4.125 over 4 (mae,none)"),
    ]
    assert ("  regress: pass when mae ≤ 3, fail above (0.3 of the way up its 0–10 scale, from --scale 0:10) [1 run]; "
            "change with --pass-threshold regress=X") in summary.details()


def test_truthfulqa_gen_like_task_picks_the_acc_metric_and_doc_references(tmp_path, tmp_db):
    metrics = ["bleu_max", "bleu_acc", "bleu_diff", "rouge1_max", "rouge1_acc"]
    rows = [
        {"doc_id": i, "doc": {"question": f"Is {i} odd?", "best_answer": "Yes" if i % 2 else "No",
                              "correct_answers": ["Yes" if i % 2 else "No"], "incorrect_answers": ["Maybe"]},
         "target": " ", "arguments": [[f"Q: Is {i} odd?\nA:", {"until": ["\n"]}]],
         "resps": [["Yes"]], "filtered_resps": ["Yes"], "filter": "none", "metrics": metrics,
         "bleu_max": 100.0 if i % 2 else 12.0, "bleu_acc": 1 if i % 2 else 0, "bleu_diff": 3.0,
         "rouge1_max": 90.0, "rouge1_acc": 1}
        for i in range(4)
    ]
    results = {"model_name": "m", "results": {"truthfulqa_gen": {"bleu_max,none": 56.0, "bleu_acc,none": 0.5}},
               "n-samples": {"truthfulqa_gen": {"original": 4, "effective": 4}},
               "configs": {"truthfulqa_gen": {"validation_split": "validation"}}}
    ingest_paths([_lmeval_rows(rows, tmp_path / "m", "truthfulqa_gen", results)], db=tmp_db)
    assert q(tmp_db, "SELECT main_metric, scale_source, main_split, harness_agrees, harness_note FROM runs") == [
        ("bleu_acc,none", "registry", "validation", True, "agrees: 0.5 = 2/4 (bleu_acc,none, split validation)"),
    ]
    refs = q(tmp_db, "SELECT refs FROM instances WHERE instance_id = '1'")[0][0]
    assert json.loads(refs) == [{"text": "Yes", "correct": True}, {"text": "Maybe", "correct": False}]


def test_loglikelihood_outputs_are_never_the_gold(tmp_path, tmp_db):
    one = {"doc_id": 0, "doc": {"question": "2+2"}, "target": " 4", "arguments": [["2+2=", " 4"]],
           "resps": [[["-3.5", "False"]]], "filtered_resps": [["-3.5", "False"]], "filter": "none",
           "metrics": ["acc"], "acc": 0.0}
    choice = {"doc_id": 1, "doc": {"question": "Sky?"}, "target": 0,
              "arguments": [["Sky is", " blue"], ["Sky is", " green"]],
              "resps": [[["-4.0", "False"]], [["-1.0", "True"]]], "filtered_resps": [["-4.0", "False"], ["-1.0", "True"]],
              "filter": "none", "metrics": ["acc"], "acc": 0.0}
    ingest_paths([_lmeval_rows([one, choice], tmp_path / "m", "toy", {"model_name": "m"})], db=tmp_db)
    rows = q(tmp_db, "SELECT o.instance_id, o.output_text, p.output_kind, i.refs FROM outcomes o "
                     "JOIN predictions p USING (run_id, instance_id) JOIN instances i USING (run_id, instance_id) ORDER BY 1")
    assert [(r[0], r[1], r[2], json.loads(r[3])[0]["text"]) for r in rows] == [
        ("0", "(loglikelihood task, no generated text: the target is not the model's greedy continuation; "
              "log-likelihood of the target -3.5)", "loglikelihood", " 4"),
        ("1", "green", "chosen option", "blue"),
    ]


@requires_fixtures
def test_lmeval_fixtures_agree_with_their_results_files(tmp_db):
    ingest_paths([LMEVAL], db=tmp_db)
    rows = q(tmp_db, "SELECT dataset, settings->>'filter', settings->>'n_shot', main_metric, harness_value, harness_n, "
                     "harness_agrees, harness_note FROM runs ORDER BY ALL")
    by_note = {(r[0], r[2], r[3]): r[4:] for r in rows}
    # every run that holds all the samples its results count: the pass rate is lm-eval's mean
    assert by_note[("bias_classification", "0", "acc,none")] == (
        0.5106732348111659, 609, True, "agrees: 0.510673 = 311/609 (acc,none, split test)")
    # logs that hold part of the samples their results count cannot equal them: said so, and
    # checked as far as a part can be (no more passes or failures than the aggregate allows)
    assert by_note[("math_perturbed_full", "0", "exact_match,none")] == (
        0.0, 5000, None, "not compared: the log holds 10 of the 5000 samples its aggregate counts "
        "(0/10 pass here, consistent with 0 = 0/5000, exact_match,none, split test)")
    gsm8k = [r for r in rows if r[0] == "gsm8k"]
    assert [(r[4], r[6], r[7]) for r in gsm8k] == [
        (0.75, None, "not compared: the log holds 3 of the 100 samples its aggregate counts "
                     "(1/3 pass here, consistent with 0.75 = 75/100, exact_match,strict-match, split test)"),
        (0.77, None, "not compared: the log holds 3 of the 100 samples its aggregate counts "
                     "(2/3 pass here, consistent with 0.77 = 77/100, exact_match,strict-match, split test)"),
    ]
    # span F1 is a corpus aggregate: stored, but not compared with per-doc scores
    assert {r[6] for r in rows if r[0] == "masakhaner_luo_prompt_1"} == {None}
    bias = q(tmp_db, "SELECT avg(is_correct::INT), count(*) FILTER (WHERE output_kind = 'chosen option') FROM predictions "
                     "JOIN runs USING (run_id) WHERE dataset = 'bias_classification'")
    assert bias == [(0.5106732348111659, 609)]
    # a failed multiple-choice prediction shows the choice the model preferred, never the gold
    shown_gold = q(tmp_db, "SELECT count(*) FROM outcomes o JOIN instances i USING (run_id, instance_id) "
                           "WHERE o.dataset = 'bias_classification' AND NOT o.is_correct "
                           "AND o.output_text = (SELECT r.text FROM (SELECT unnest(from_json(i.refs, '[{\"text\": \"VARCHAR\", \"correct\": \"BOOLEAN\"}]')) AS r) WHERE r.correct)")
    assert shown_gold == [(0,)]
    assert q(tmp_db, "SELECT count(*) FROM outcomes WHERE dataset = 'bias_classification' AND NOT is_correct") == [(609 - 311,)]


@requires_fixtures
def test_zero_and_five_shot_are_two_runs(tmp_db):
    summary = ingest_paths([MASAKHANER], db=tmp_db)
    assert summary.runs == 2
    assert q(tmp_db, "SELECT method, settings->>'n_shot', settings->>'filter', count(*) OVER () FROM runs ORDER BY 1") == [
        ("0-shot", "0", "flexible-extract", 2), ("5-shot", "5", "flexible-extract", 2),
    ]
    assert q(tmp_db, "SELECT count(DISTINCT run_id), count(DISTINCT model), count(DISTINCT dataset) FROM runs") == [(2, 1, 1)]


@requires_fixtures
def test_inspect_n_counts_as_incorrect_and_logs_agree_with_headers(tmp_path, tmp_db):
    ingest_paths([INSPECT], db=tmp_db)
    assert q(tmp_db, "SELECT count(*), count(*) FILTER (WHERE harness_agrees), count(*) FILTER (WHERE harness_agrees IS NULL) FROM runs") == [(9, 8, 1)]
    # the unscored popularity log has no aggregate to check
    assert q(tmp_db, "SELECT main_metric, harness_note FROM runs WHERE harness_agrees IS NULL") == [(None, None)]
    # every scored log: the share of passes is the header's accuracy
    for value, rate in q(tmp_db, "SELECT r.harness_value, avg(o.is_correct::INT) FROM runs r JOIN outcomes o USING (run_id) "
                                 "WHERE r.harness_agrees GROUP BY r.run_id, r.harness_value"):
        assert rate == pytest.approx(value, abs=1e-12)
    # a log answered "N" everywhere: each answer fails, the log stays in the accuracy table
    src = INSPECT / "inspect_ai_tests" / "log_read_sample.json"
    log = json.loads(src.read_text())
    for sample in log["samples"]:
        for score in sample["scores"].values():
            score["value"] = "N"
    log["eval"]["task_id"] = "no-answers"
    log["results"]["scores"][0]["metrics"]["accuracy"]["value"] = 0.0
    (tmp_path / "n.json").write_text(json.dumps(log))
    ingest_paths([tmp_path / "n.json"], db=tmp_db)
    assert q(tmp_db, "SELECT score, is_correct, harness_agrees FROM outcomes JOIN runs USING (run_id) WHERE settings->>'task_id' = 'no-answers'") == [
        (0.0, False, True),
    ]


@requires_fixtures
def test_whole_fixture_folder_lists_skipped_files_by_reason(tmp_db):
    r = run_module("ingest", FIXTURES, "--db", tmp_db)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    skipped = [line for line in lines if line.startswith("skipped ") or line.startswith("  format not read")]
    assert len(skipped) == 2
    assert skipped[1].startswith("  format not read (")
    assert str(FIXTURES / "README.md") in skipped[1]
    assert lines[-1].startswith("ingested ")


def test_skip_reasons_results_without_samples_and_unreadable(tmp_path, tmp_db):
    folder = _lmeval_rows([{"doc_id": 0, "doc": {"question": "q"}, "target": "a", "resps": [["a"]], "filtered_resps": ["a"],
                            "filter": "none", "metrics": ["exact_match"], "exact_match": 1.0}],
                          tmp_path / "m", "toy", {"model_name": "m"})
    (folder / "results_2024-01-01T00-00-00.000001.json").write_text("{}")
    (folder / "notes.txt").write_text("hello")
    secret = folder / "locked.json"
    secret.write_text("{}")
    secret.chmod(0)
    summary = ingest_paths([tmp_path], db=tmp_db)
    expected = {
        "results file without samples": [str(folder / "results_2024-01-01T00-00-00.000001.json")],
        "format not read": [str(folder / "notes.txt")],
    }
    if not _readable_anyway(secret):
        expected["unreadable"] = [str(secret)]
    else:
        expected["format not read"].insert(0, str(secret))
    assert summary.skipped == expected
    assert summary.runs == 1


def _readable_anyway(path: Path) -> bool:
    import os

    return os.access(path, os.R_OK)  # root reads any file


@requires_fixtures
def test_suite_ten_folders_deep_is_ingested(tmp_path, tmp_db):
    deep = tmp_path.joinpath(*[f"level{i}" for i in range(10)])
    run = MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192"
    shutil.copytree(run, deep / "suite" / run.name)
    (deep / "loop").symlink_to(tmp_path, target_is_directory=True)  # a link loop must end, not hang
    summary = ingest_paths([tmp_path], db=tmp_db)
    assert (summary.runs, summary.predictions) == (1, 20)


def test_kernel_folders_are_never_searched():
    from ingest.walk import every_file_below

    assert list(every_file_below(Path("/proc/self"))) == []
    assert list(every_file_below(Path("/sys"))) == []


@requires_fixtures
def test_two_suites_both_named_v1_stay_two_runs(tmp_path, tmp_db):
    run = MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192"
    for team in ("team_a", "team_b"):
        shutil.copytree(run, tmp_path / team / "v1" / run.name)
    summary = ingest_paths([tmp_path], db=tmp_db)
    assert summary.runs == 2
    assert q(tmp_db, "SELECT count(DISTINCT run_id), count(DISTINCT run_name), count(DISTINCT source_path), "
                     "count(DISTINCT settings->>'suite') FROM runs") == [(2, 1, 2, 1)]
    # re-ingesting one of the logs replaces that run only
    assert ingest_paths([tmp_path / "team_a"], db=tmp_db).runs == 1
    assert q(tmp_db, "SELECT count(*) FROM runs") == [(2,)]


def test_nonfinite_scores_are_unscored_and_reported(tmp_path, tmp_db):
    f = tmp_path / "scores.jsonl"
    f.write_text(
        '{"model": "a", "instance_id": "1", "output": "x", "score": NaN}\n'
        '{"model": "a", "instance_id": "2", "output": "x", "score": 1e999}\n'
        '{"model": "a", "instance_id": "3", "output": "x", "score": 1.0}\n'
        '{"model": "a", "instance_id": "4", "output": "x", "score": 0.2}\n'
    )
    summary = ingest_paths([f], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(scales=["0:1"])))
    assert q(tmp_db, "SELECT instance_id, score, is_correct FROM outcomes ORDER BY 1") == [
        ("1", None, None), ("2", None, None), ("3", 1.0, True), ("4", 0.2, False),
    ]
    assert summary.nonfinite == 2
    assert any(line.startswith("unscored: 2 predictions with a NaN or infinite score") for line in summary.details())


@requires_fixtures
def test_strict_exits_2_when_a_run_differs(tmp_path, tmp_db):
    folder = tmp_path / "gsm8k"
    shutil.copytree(LMEVAL / "pyfade_gsm8k_gemma3_base", folder)
    results = next(folder.glob("results_*.json"))
    data = json.loads(results.read_text())
    data["n-samples"]["gsm8k"]["effective"] = 3  # as if the log held every sample its results count
    results.write_text(json.dumps(data))
    differs = run_module("ingest", folder, "--db", tmp_db, "--strict")
    assert differs.returncode == 2
    assert "--strict: 1 run(s) differ" in differs.stderr
    assert "differs by 0.1033: 0.666667 = 2/3 here, the log says 0.77 (exact_match,strict-match, split test)" in differs.stdout
    agrees = run_module("ingest", LMEVAL / "lmeval_pr1974_bias_classification_llama3_8b", "--db", tmp_db, "--strict")
    assert agrees.returncode == 0, agrees.stderr
    assert agrees.stdout.splitlines()[0] == "harness check: 1 of 1 runs agree with the harness's own headline"


def test_canonical_names_and_question_hash():
    assert canonical_dataset("inspect_evals/gsm8k") == "gsm8k"
    assert canonical_dataset("SimpleSafetyTests", groups=["simple_safety_tests"]) == "simple_safety_tests"
    assert canonical_dataset("SimpleSafetyTests", groups=[]) == "simple_safety_tests"
    assert canonical_dataset("MyBench") == "MyBench"  # only HELM scenarios take run-group spelling
    assert canonical_dataset("mmlu", groups=["mmlu"]) == "mmlu"
    assert canonical_dataset("gsm8k_cot_llama", {"gsm8k_cot_llama": "gsm8k"}) == "gsm8k"
    assert question_hash("  What is 2+2? ") == question_hash("what   is 2+2") != question_hash("what is 2+3")
    assert question_hash("") is None and question_hash(None) is None


def test_question_normalization_takes_its_short_way_only_where_it_changes_nothing():
    """normalize_question skips collapsing whitespace when the lowered text is printable and has
    no double space (#25 speed): that holds only if every whitespace character but the space is
    unprintable, checked here on every code point, and both ways agree on texts mixing them."""
    import random
    import string
    import sys

    from core.names import _EDGES, normalize_question

    spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()]
    assert [c for c in spaces if c.isprintable()] == [" "]

    def general(text: str) -> str:
        return " ".join(text.lower().split()).strip(_EDGES)

    rng = random.Random(25)
    pieces = [*spaces, "  ", "a", "B", "é", "İ", "?", "!", "2+2", " what is", "Ω", "\u0300", "\u200b", "\0"]
    texts = ["", " ", "What is 2+2?", "  What is 2+2? ", "a  b", "a\tb", "A\u00a0B", "x\u3000y", "İstanbul"]
    texts += ["".join(rng.choices(pieces, k=rng.randint(1, 12))) for _ in range(20_000)]
    texts += ["".join(rng.choices(string.printable, k=rng.randint(1, 40))) for _ in range(20_000)]
    assert [normalize_question(t) for t in texts] == [general(t) for t in texts]


def test_config_aliases_rename_datasets(tmp_path, tmp_db):
    config = tmp_path / "faultline.yaml"
    config.write_text("aliases:\n  my_gsm: gsm8k\n")
    f = _jsonl(tmp_path / "p.jsonl", [{"model": "a", "dataset": "my_gsm", "instance_id": "1", "output": "4", "correct": True}])
    r = run_module("ingest", f, "--db", tmp_db, "--config", config)
    assert r.returncode == 0, r.stderr
    assert q(tmp_db, "SELECT dataset, dataset_raw FROM runs") == [("gsm8k", "my_gsm")]
    assert PassConfig.build(config_file=read_config(config)).aliases == {"my_gsm": "gsm8k"}


@requires_fixtures
def test_helm_questions_rewritten_with_new_ids_share_question_hashes(tmp_path, tmp_db):
    run = MMLU_SUITE / "mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192"
    instances = json.loads((run / "instances.json").read_text())
    rows = [
        {"model": "other", "dataset": "mmlu", "instance_id": f"q{n}", "input": inst["input"]["text"].upper() + "  ",
         "output": "A", "correct": True}
        for n, inst in enumerate(instances)
    ]
    custom = _jsonl(tmp_path / "other.jsonl", rows)
    ingest_paths([run, custom], db=tmp_db)
    pairs = q(tmp_db, "SELECT count(*) FROM instances a JOIN instances b ON a.question_hash = b.question_hash "
                      "AND a.run_id < b.run_id AND a.instance_id <> b.instance_id")
    assert pairs == [(len(instances),)]
    assert len(instances) == 20 and not math.isnan(len(instances))


def test_inspect_partial_credit_follows_value_to_float(tmp_path, tmp_db):
    header = {"status": "success", "eval": {"task": "inspect_evals/toy", "task_id": "T", "run_id": "R", "model": "m"},
              "results": {"completed_samples": 4, "scores": [{"name": "s", "metrics": {"accuracy": {"value": 0.375}}}]}}
    samples = [{"id": i, "epoch": 1, "input": "q", "target": "a", "output": {"completion": "a"}, "scores": {"s": {"value": v}}}
               for i, v in enumerate(["C", "P", "I", "N"])]
    path = tmp_path / "toy.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for s in samples:
            archive.writestr(f"samples/{s['id']}_epoch_1.json", json.dumps(s))
    ingest_paths([path], db=tmp_db)
    assert q(tmp_db, "SELECT score, is_correct FROM outcomes ORDER BY instance_id") == [
        (1.0, True), (0.5, False), (0.0, False), (0.0, False),
    ]
    assert q(tmp_db, "SELECT dataset, dataset_raw, scale_source, harness_agrees, harness_note FROM runs") == [
        ("toy", "inspect_evals/toy", "inspect value_to_float", True, "agrees: mean 0.375 over 4 (s/accuracy)"),
    ]


def test_the_pass_rule_in_sql_is_the_pass_rule_in_python():
    """store/runs.py judges late runs in SQL (`judged_sql`); every kind of score, threshold,
    direction and failed request gets the verdict `judged` gives."""
    import itertools

    import duckdb

    from core.verdicts import judged, judged_sql

    scores = [None, math.nan, math.inf, -math.inf, 0.0, 0.5, 0.8, 1.0, -2.0]
    cases = list(itertools.product(scores, [None, 0.5, 0.8, 0.0], [False, True], [False, True, None]))
    con = duckdb.connect()
    con.execute("CREATE TABLE c (i INTEGER, score DOUBLE, threshold DOUBLE, lower BOOLEAN, infra BOOLEAN)")
    con.executemany("INSERT INTO c VALUES (?, ?, ?, ?, ?)", [(i, *case) for i, case in enumerate(cases)])
    got = dict(con.execute(f"SELECT i, {judged_sql('score', 'threshold', 'lower', 'infra')} FROM c").fetchall())
    want = {i: None if infra else judged(score, threshold, lower)
            for i, (score, threshold, lower, infra) in enumerate(cases)}
    assert got == want
    assert sum(v is True for v in want.values()) == 36 and sum(v is False for v in want.values()) == 24
