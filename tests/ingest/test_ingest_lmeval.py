"""lm-evaluation-harness samples + results files, read in place from ../shared/fixtures/lm-eval."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, q, run_module, requires_fixtures
from ingest import IngestError, PassConfig, ReadOptions, ingest_paths
from ingest.registry import choose

pytestmark = requires_fixtures  # reads the shared real logs

LMEVAL = FIXTURES / "lm-eval"
GSM8K_BASE = LMEVAL / "pyfade_gsm8k_gemma3_base"
GSM8K_TUNED = LMEVAL / "pyfade_gsm8k_gemma3_tuned"
MASAKHANER = LMEVAL / "lmeval_pr3506_masakhaner_luo_gemma2b"
BIAS = LMEVAL / "lmeval_pr1974_bias_classification_llama3_8b"
MATH = LMEVAL / "eee_math_perturbed_qwen3_93m"


def reported(results_glob: str, task: str, key: str) -> float:
    """The run's own aggregate from its results file."""
    (results_file,) = LMEVAL.glob(results_glob)
    return json.loads(results_file.read_text())["results"][task][key]


def per_run(db):
    return q(
        db,
        "SELECT r.model, r.dataset, r.domain, r.method, r.main_metric, count(*), count(o.is_correct), "
        "avg(o.is_correct::INT) FROM outcomes o JOIN runs r USING (run_id) "
        "GROUP BY ALL ORDER BY r.model, r.method",
    )


@pytest.mark.parametrize("path", [GSM8K_BASE, MASAKHANER, BIAS, MATH, next(BIAS.glob("samples_*"), BIAS / "samples_*")])
def test_auto_recognises_lmeval(path):
    assert [r.name for r in choose(path)] == ["lm-eval"]


def test_gsm8k_two_models_share_instance_ids(tmp_db):
    s = ingest_paths([GSM8K_BASE, GSM8K_TUNED], db=tmp_db)
    assert (s.runs, s.predictions, s.failures, s.infra_errors) == (2, 6, 3, 0)
    # the samples hold 3 of the 100 docs the results aggregate, so only the per-doc scores are checked
    assert per_run(tmp_db) == [
        ("gemma3:12b-it-q4_K_M", "gsm8k", None, "5-shot", "exact_match,strict-match", 3, 3, 2 / 3),
        ("gemma3:12b-u1", "gsm8k", None, "5-shot", "exact_match,strict-match", 3, 3, 1 / 3),
    ]
    pairs = q(
        tmp_db,
        "SELECT a.instance_id, a.is_correct, b.is_correct FROM outcomes a JOIN outcomes b "
        "ON a.dataset = b.dataset AND a.instance_id = b.instance_id AND a.model < b.model ORDER BY 1",
    )
    assert pairs == [("16", True, True), ("17", False, False), ("18", True, False)]
    row = q(
        tmp_db,
        "SELECT i.split, i.input_text, i.input_messages, i.refs, p.output_text, p.mapped_output, p.metrics "
        "FROM predictions p JOIN instances i USING (run_id, instance_id) JOIN runs r USING (run_id) "
        "WHERE r.model = 'gemma3:12b-u1' AND p.instance_id = '18'",
    )[0]
    split, input_text, messages, refs, output, mapped, metrics = row
    assert split == "test"
    # chat models get the prompt as serialised messages: the user turn is the input text
    assert input_text.startswith("Question: ")
    assert input_text.endswith("How many dozens of eggs will she eat in 4 weeks?\nAnswer:")
    assert json.loads(messages)[0]["role"] == "user"
    assert json.loads(refs)[0]["text"].endswith("#### 7")
    assert output.startswith("Claire eats 3 eggs per day")
    assert mapped == "3.5"
    assert json.loads(metrics) == {"exact_match": 0.0}


def test_masakhaner_zero_and_five_shot(tmp_db):
    s = ingest_paths([MASAKHANER], db=tmp_db)
    assert (s.runs, s.predictions) == (2, 370)
    # the 0-shot results file is named masakhaner_luo_0shot_investigation_<datetime>.json
    assert reported("*/0shot/masakhaner*.json", "masakhaner_luo_prompt_1", "f1,flexible-extract") == 0.0
    assert reported("*/5shot/results_*.json", "masakhaner_luo_prompt_1", "f1,flexible-extract") == 0.0656270305392884
    # f1 values are [gold, pred] pairs lm-eval scores over the corpus; per doc they get token F1,
    # so only docs with no entities, answered with none, pass
    assert per_run(tmp_db) == [
        ("google/gemma-2b", "masakhaner_luo_prompt_1", None, "0-shot", "f1,flexible-extract", 185, 185, 11 / 185),
        ("google/gemma-2b", "masakhaner_luo_prompt_1", None, "5-shot", "f1,flexible-extract", 185, 185, 0.0),
    ]
    passed = q(
        tmp_db,
        "SELECT i.refs, p.mapped_output, p.score FROM predictions p JOIN instances i USING (run_id, instance_id) "
        "WHERE p.is_correct",
    )
    assert {(json.dumps(json.loads(refs)), mapped, score) for refs, mapped, score in passed} == {
        ('[{"text": "", "correct": true}]', "", 1.0)
    }
    # the corpus F1 ranks 5-shot above 0-shot, and so do the mean per-doc scores
    means = q(tmp_db, "SELECT r.method, avg(p.score) FROM predictions p JOIN runs r USING (run_id) GROUP BY 1 ORDER BY 2")
    assert [m for m, _ in means] == ["0-shot", "5-shot"]
    assert q(tmp_db, "SELECT count(DISTINCT instance_id) FROM outcomes") == [(185,)]


def test_bias_classification_2024_layout_matches_reported_accuracy(tmp_db):
    s = ingest_paths([BIAS], db=tmp_db)
    acc = reported("lmeval_pr1974*/results_*.json", "bias_classification", "acc,none")
    assert acc == 0.5106732348111659
    assert (s.runs, s.predictions, s.failures) == (1, 609, 298)
    assert per_run(tmp_db) == [
        ("meta-llama/Meta-Llama-3-8B", "bias_classification", None, "0-shot", "acc,none", 609, 609, acc),
    ]
    row = q(
        tmp_db,
        "SELECT i.input_text, i.choices, i.refs, p.output_text, p.metrics FROM predictions p "
        "JOIN instances i USING (run_id, instance_id) WHERE instance_id = '1'",
    )[0]
    assert row[0].startswith("Given a sentence, predict if the sentence contains a bias or not.")
    assert json.loads(row[1]) == {"0": "A", "1": "B"}
    assert json.loads(row[2]) == [{"text": "A", "correct": True}]
    # loglikelihood responses are strings: the answer is the likeliest continuation
    assert row[3] == "B"
    assert json.loads(row[4]) == {"acc": 0.0, "f1": 0.0, "acc_norm": 0.0}


def test_math_perturbed_matches_reported_accuracy(tmp_db):
    s = ingest_paths([MATH], db=tmp_db)
    assert reported("eee_math*/results_*.json", "math_perturbed_full", "exact_match,none") == 0.0
    assert (s.runs, s.predictions, s.failures) == (1, 10, 10)
    assert per_run(tmp_db) == [
        (
            "RylanSchaeffer/mem_Qwen3-93M_minerva_math_rep_0_sbst_1.0000_epch_1_ot_1",
            "math_perturbed_full", None, "0-shot", "exact_match,none", 10, 10, 0.0,
        )
    ]


def test_whole_fixture_folder(tmp_db):
    s = ingest_paths([LMEVAL], db=tmp_db)
    assert (s.runs, s.predictions) == (6, 3 + 3 + 185 + 185 + 609 + 10)


def test_single_samples_file_and_reingest_replaces(tmp_db):
    samples = next(BIAS.glob("samples_*"))
    ingest_paths([samples], db=tmp_db)
    ingest_paths([samples], db=tmp_db, fmt="lm-eval")
    assert q(tmp_db, "SELECT count(*), count(DISTINCT run_id) FROM outcomes") == [(609, 1)]


def test_threshold_and_metric_overrides(tmp_db):
    options = ReadOptions(pass_config=PassConfig.build(metrics=["bias_classification=f1"]), model="llama")
    ingest_paths([BIAS], db=tmp_db, options=options)
    assert q(tmp_db, "SELECT model, main_metric, main_metric_source FROM runs") == [
        ("llama", "f1,none", "config; [gold, pred] pairs scored by token F1 per doc (lm-eval aggregates them over the corpus)")
    ]
    # sklearn's f1 pairs here are (gold, pred) labels: their per-doc F1 is the accuracy
    assert q(tmp_db, "SELECT avg(is_correct::INT) FROM outcomes") == [(0.5106732348111659,)]


def _write_samples(folder, rows, results=None, task="toy", stamp="2025-01-02T03-04-05.678901"):
    folder.mkdir(parents=True, exist_ok=True)
    samples = folder / f"samples_{task}_{stamp}.jsonl"
    samples.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    if results is not None:
        (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    return samples


def _row(doc_id, flt, value, **extra):
    return {
        "doc_id": doc_id, "doc": {"question": f"q{doc_id}"}, "target": "42",
        "arguments": [[f"Question {doc_id}?", {"until": ["\n"]}]],
        "resps": [[f"answer {doc_id}"]], "filtered_resps": ["[invalid]" if value == 0 else "42"],
        "filter": flt, "metrics": ["exact_match"], "exact_match": value, **extra,
    }


def test_filters_make_separate_runs_and_groups_become_domains(tmp_path, tmp_db):
    results = {
        "group_subtasks": {"suite": ["suite_part"], "suite_part": ["toy"]},
        "higher_is_better": {"toy": {"exact_match": True}},
        "config": {"model_args": {"pretrained": "org/m"}},
    }
    rows = [_row(0, "strict", 1.0), _row(1, "strict", 0), _row(0, "loose", 1.0), _row(1, "loose", 1.0)]
    folder = tmp_path / "org__m"
    _write_samples(folder, rows, results)
    s = ingest_paths([tmp_path], db=tmp_db)
    assert (s.runs, s.predictions, s.failures) == (2, 4, 1)
    assert q(
        tmp_db,
        "SELECT r.main_metric, o.model, o.dataset, o.domain, o.instance_id, o.is_correct, i.input_text "
        "FROM outcomes o JOIN runs r USING (run_id) JOIN instances i USING (run_id, instance_id) ORDER BY 1, 5",
    ) == [
        ("exact_match,loose", "org/m", "suite", "toy", "toy/0", True, "Question 0?"),
        ("exact_match,loose", "org/m", "suite", "toy", "toy/1", True, "Question 1?"),
        ("exact_match,strict", "org/m", "suite", "toy", "toy/0", True, "Question 0?"),
        ("exact_match,strict", "org/m", "suite", "toy", "toy/1", False, "Question 1?"),
    ]


def test_infinity_is_unscored_and_reported(tmp_path, tmp_db):
    rows = [
        '{"doc_id": 0, "doc": {"text": "a"}, "target": "", "resps": [["x"]], "filtered_resps": ["x"], '
        '"filter": "none", "metrics": ["perplexity"], "perplexity": Infinity}',
        '{"doc_id": 1, "doc": {"text": "b"}, "target": "", "resps": [["y"]], "filtered_resps": ["y"], '
        '"filter": "none", "metrics": ["perplexity"], "perplexity": 0.1}',
        '{"doc_id": 2, "doc": {"text": "c"}, "target": "", "resps": [["z"]], "filtered_resps": ["z"], '
        '"filter": "none", "metrics": ["perplexity"], "perplexity": 1.0}',
    ]
    results = {"higher_is_better": {"toy": {"perplexity": False}}, "model_name": "m"}
    _write_samples(tmp_path / "run", rows, results)
    # perplexity has no fixed scale: the line is the user's to give
    summary = ingest_paths([tmp_path / "run"], db=tmp_db, options=ReadOptions(pass_config=PassConfig.build(["toy=0.3"])))
    # a non-finite score decides nothing (issue 11 item 4): unscored, and the summary says so
    assert summary.nonfinite == 1
    assert "unscored: 1 predictions with a NaN or infinite score" in "\n".join(summary.details())
    assert q(tmp_db, "SELECT instance_id, score, is_correct FROM outcomes ORDER BY 1") == [
        ("0", None, None), ("1", 0.1, True), ("2", 1.0, False),
    ]
    assert q(tmp_db, "SELECT DISTINCT lower_is_better, metric_max, pass_threshold, scale_source FROM runs") == [
        (True, None, 0.3, "config"),
    ]


def test_model_falls_back_to_folder_name(tmp_path, tmp_db):
    _write_samples(tmp_path / "my-model", [_row(0, "none", 1.0)])
    ingest_paths([tmp_path / "my-model"], db=tmp_db)
    assert q(tmp_db, "SELECT model, dataset FROM outcomes") == [("my-model", "toy")]


def test_bad_line_names_file_and_line_and_writes_nothing(tmp_path, tmp_db):
    good = _write_samples(tmp_path / "good", [_row(0, "none", 1.0)], {"model_name": "m"})
    bad = _write_samples(tmp_path / "bad", [_row(0, "none", 1.0), '{"doc_id": 1, "doc": {', _row(2, "none", 1.0)])
    ingest_paths([good], db=tmp_db)
    with pytest.raises(IngestError, match=rf"{bad.name}:2:\d+: invalid JSON"):
        ingest_paths([bad], db=tmp_db)
    assert q(tmp_db, "SELECT count(*) FROM outcomes") == [(1,)]


def test_duplicate_doc_within_filter_is_an_error(tmp_path, tmp_db):
    bad = _write_samples(tmp_path / "dup", [_row(0, "none", 1.0), _row(0, "none", 0)])
    with pytest.raises(IngestError, match=rf"{bad.name}:2: doc 0 with filter 'none' already at {bad.name}:1"):
        ingest_paths([bad], db=tmp_db)


def test_cli_summary_and_bad_input(tmp_path, tmp_db):
    ok = run_module("ingest", MASAKHANER, "--db", tmp_db, "--format", "lm-eval")
    assert ok.returncode == 0, ok.stderr
    lines = ok.stdout.splitlines()
    assert lines[:5] == [
        "harness check: 2 runs not compared:",
        "  masakhaner_luo_prompt_1:flexible-extract:google/gemma-2b:0-shot: not compared: lm-eval aggregates f1 "
        "over the corpus, not as a mean of per-doc scores",
        "  masakhaner_luo_prompt_1:flexible-extract:google/gemma-2b:5-shot: not compared: lm-eval aggregates f1 "
        "over the corpus, not as a mean of per-doc scores",
        "thresholds on continuous metrics:",
        "  masakhaner_luo_prompt_1: pass when f1 ≥ 0.7, fail below (0.7 of the way up its 0–1 scale, from "
        "per-document token F1) [2 runs]; change with --pass-threshold masakhaner_luo_prompt_1=X",
    ]
    assert lines[-1].startswith("ingested 2 runs, 370 predictions, 359 failures in ")
    bad = _write_samples(tmp_path / "bad", ['{"doc_id": 0, "doc"'])
    failed = run_module("ingest", bad, "--db", tmp_db)
    assert failed.returncode != 0
    assert re.search(rf"{re.escape(str(bad))}:1:\d+: invalid JSON", failed.stderr)
    assert "Traceback" not in failed.stderr
