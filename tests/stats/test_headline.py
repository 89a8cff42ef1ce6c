"""Issue #23, items 1–3: two numbers never confused, the threshold as the analyst's knob, and
paired tests on what was measured — on generated HELM suites (a MedHELM-shaped 1–5 jury suite
and a Lite-shaped suite with F1 and BLEU-4), on real fixture suites (NarrativeQA's F1, HELM
Safety's scores, MMLU), and on two models whose failures come from different dataset mixes.

Expected values come from the suites' own files (HELM's stats.json, the planted scores) and
from scipy/numpy, never from the store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy import stats as sst
from streamlit.testing.v1 import AppTest

import stats
import store
from core.power import mcnemar_mde
from export import export_eee
from ingest import ingest_paths
from stats import fmt
from core import significance as t
from stats.cli import main
from tests.conftest import HELM, requires_fixtures
from tests.headline_suites import A, ACI, B, MED_DIALOG, NARRATIVE, WMT, jury_suite, lite_suite
from tests.seed_store import seed
from ui.text import md

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def suites(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("suites")
    return {"jury": jury_suite(root), "lite": lite_suite(root)}


@pytest.fixture
def both_db(suites, tmp_path) -> Path:
    db = tmp_path / "both.duckdb"
    ingest_paths([suites["jury"], suites["lite"]], db=db)
    return db


def helm_means(suite: Path, metric: str) -> dict[tuple[str, str], float]:
    """(model, run name) -> HELM's own mean of `metric` on the test split, from stats.json."""
    out = {}
    for run in sorted(suite.iterdir()):
        spec = json.loads((run / "run_spec.json").read_text())
        for stat in json.loads((run / "stats.json").read_text()):
            if stat["name"]["name"] == metric and stat["name"]["split"] == "test":
                out[(spec["adapter_spec"]["model"], run.name)] = stat["mean"]
    return out


def rows_by(db, *args) -> dict:
    assert main(["accuracy", "--db", str(db), "--json", *args]) == 0
    return {(r["model"], r["dataset"]): r for r in json.loads(_out.readouterr().out)}


@pytest.fixture(autouse=True)
def _capture(capsys):
    global _out
    _out = capsys
    yield


def _t(scores: list[float]) -> tuple[float, float]:
    """Student t 95% interval of a mean, straight from scipy (not the code under test)."""
    x = np.array(scores)
    half = sst.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return x.mean() - half, x.mean() + half


# ---------------------------------------------------------------- 1. two numbers, never confused


def test_jury_headline_is_the_mean_of_1_to_5_and_failures_are_apart(suites, both_db):
    rows = rows_by(both_db)
    aci = rows[(A, "aci_bench")]
    # HELM's own number: the jury mean in stats.json (4.48 of 1–5), not the 97.5% that pass 3.8
    (helm,) = [v for (m, run), v in helm_means(suites["jury"], "aci_bench_accuracy").items() if m == A]
    assert aci["headline"] == pytest.approx(helm, abs=1e-12) == pytest.approx(538 / 120, abs=1e-12)
    assert (aci["metric"], aci["headline_metric"], aci["headline_kind"]) == (
        "aci_bench_accuracy", "aci_bench_accuracy", "mean score")
    assert (aci["scale_min"], aci["scale_max"], aci["headline_interval"]) == (1.0, 5.0, "t")
    low, high = _t(ACI[A])
    assert (aci["headline_ci_low"], aci["headline_ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    # the analysis threshold, named and apart: 3.8 = 0.7 of the way up 1–5; 1 of 40 notes below it
    assert aci["analysis_threshold"] == 3.8
    assert aci["analysis_rule"] == "failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range"
    assert (aci["failures"], aci["failure_rate"]) == (1, 1 / 40)
    ci = sst.binomtest(1, 40).proportion_ci(method="wilson")
    assert (aci["failure_ci_low"], aci["failure_ci_high"]) == (pytest.approx(ci.low), pytest.approx(ci.high))
    # nothing called accuracy holds the thresholded rate of a continuous metric
    assert aci["accuracy"] is None and aci["correct"] is None and aci["ci_low"] is None
    # the text every page, table and report prints
    assert stats.headline.headline_text(aci) == "4.48 of 1–5"


def test_a_dataset_helm_runs_per_subset_reports_the_mean_over_subsets(suites, both_db):
    rows = rows_by(both_db)
    means = helm_means(suites["jury"], "med_dialog_accuracy")
    for model in (A, B):
        r = rows[(model, "med_dialog")]
        per_subset = [v for (m, run), v in means.items() if m == model]
        assert len(per_subset) == 2
        assert r["headline"] == pytest.approx(sum(per_subset) / 2, abs=1e-12)
        assert r["headline_interval"] == "t over domains"
        # the stratified interval, from scipy: SE = sqrt(sum s_k^2 / n_k) / K, Welch–Satterthwaite df
        parts = [np.array(MED_DIALOG[s][model]) for s in MED_DIALOG]
        v = [p.var(ddof=1) / len(p) for p in parts]
        df = sum(v) ** 2 / sum(vk ** 2 / (len(p) - 1) for vk, p in zip(v, parts))
        half = sst.t.ppf(0.975, df) * math.sqrt(sum(v)) / 2
        assert r["headline_ci_low"] == pytest.approx(r["headline"] - half, abs=1e-12)
        assert r["headline_ci_high"] == pytest.approx(r["headline"] + half, abs=1e-12)
        # the failures are pooled over the questions, under 3.8
        below = sum(s < 3.8 for p in parts for s in p)
        assert (r["failures"], r["failure_rate"]) == (below, below / 40)


def test_lite_f1_and_bleu_are_the_harness_means(suites, both_db):
    rows = rows_by(both_db)
    for dataset, metric, planted in (("narrative_qa", "f1_score", NARRATIVE), ("wmt_14", "bleu_4", WMT)):
        means = helm_means(suites["lite"], metric)
        for model in (A, B):
            r = rows[(model, dataset)]
            (helm,) = [v for (m, run), v in means.items() if m == model and run.startswith(dataset)]
            assert r["headline"] == pytest.approx(helm, abs=1e-12)
            assert (r["metric"], r["scale_min"], r["scale_max"], r["analysis_threshold"]) == (metric, 0.0, 1.0, 0.7)
            assert r["failures"] == sum(s < 0.7 for s in planted[model])
            assert r["accuracy"] is None
    # BLEU-4 0.037 (HELM prints 0.037), while every sentence fails ErrorMap's 0.7: 100% failures
    assert stats.headline.headline_text(rows[(A, "wmt_14")]) == "0.037 of 0–1"
    assert rows[(A, "wmt_14")]["failure_rate"] == 1.0


@requires_fixtures
def test_real_narrative_qa_f1_and_safety_scores_equal_helm_stats_json(tmp_path):
    db = tmp_path / "real.duckdb"
    ingest_paths([HELM / "scenario-state-only", HELM / "safety-v4"], db=db)
    rows = rows_by(db)
    nqa = rows[("openai/gpt2", "narrative_qa")]
    stats_json = HELM / "scenario-state-only" / "narrative_qa-model=openai_gpt2" / "stats.json"
    (f1,) = [s["mean"] for s in json.loads(stats_json.read_text())
             if s["name"]["name"] == "f1_score" and s["name"]["split"] == "test" and "perturbation" not in s["name"]]
    assert nqa["headline"] == pytest.approx(f1, abs=1e-12) and nqa["headline_kind"] == "mean score"
    assert nqa["headline_ci_low"] == 0.0  # the t interval over 4 questions reaches below 0: cut at the scale
    # HELM Safety scores 1 / 0.5 / 0: a mean for every model on the dataset, even one that only scored 1
    for model, value in (("openai/gpt-4o-2024-05-13", 0.98), ("anthropic/claude-3-5-sonnet-20240620", 1.0)):
        r = rows[(model, "simple_safety_tests")]
        assert (r["headline"], r["headline_kind"], r["accuracy"]) == (value, "mean score", None)
    # MMLU in the same store stays a pass rate: one number
    gpt2 = rows[("openai/gpt2", "mmlu")]
    assert gpt2["headline_kind"] == "pass rate" and gpt2["headline"] == gpt2["accuracy"] == 1 / 9


def test_cli_table_names_both_numbers_and_the_rule(both_db, capsys):
    assert main(["accuracy", "--db", str(both_db), "--datasets", "aci_bench"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith(A))
    assert "4.48 of 1–5" in line and "1 (2.5%)" in line and "97.5" not in out
    assert "aci_bench: failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range; change it with " \
           "--threshold aci_bench=X" in out


def test_export_carries_the_headline_and_the_failure_rate_apart(both_db, tmp_path):
    export_eee(tmp_path / "out", db=both_db, datasets=["aci_bench"])
    aggregates = {json.loads(p.read_text())["model_info"]["id"]: json.loads(p.read_text())
                  for p in (tmp_path / "out").glob("data/aci_bench/*/*/*[0-9a-f].json")}
    head, failures = aggregates[A]["evaluation_results"]
    assert head["metric_config"]["metric_id"] == "aci_bench_accuracy"
    assert (head["metric_config"]["min_score"], head["metric_config"]["max_score"]) == (1.0, 5.0)
    assert head["score_details"]["score"] == pytest.approx(538 / 120, abs=1e-12)
    low, high = _t(ACI[A])
    ci = head["score_details"]["uncertainty"]["confidence_interval"]
    assert (ci["lower"], ci["upper"], ci["method"]) == (pytest.approx(low), pytest.approx(high), "Student t")
    assert failures["metric_config"]["metric_id"] == "faultline.failure_rate"
    assert failures["metric_config"]["lower_is_better"] is True
    assert failures["score_details"]["score"] == 1 / 40
    assert failures["metric_config"]["additional_details"]["analysis_threshold"] == "3.8"
    # read back: the same outcomes, and the harness's number agrees with the records' scores
    back = tmp_path / "back.duckdb"
    ingest_paths([tmp_path / "out"], db=back)
    cols = "model, dataset, split, score, is_correct, output_text"
    with duckdb.connect(str(both_db), read_only=True) as c1, duckdb.connect(str(back), read_only=True) as c2:
        assert c2.execute(f"SELECT {cols} FROM outcomes ORDER BY ALL").fetchall() == c1.execute(
            f"SELECT {cols} FROM outcomes WHERE dataset = 'aci_bench' ORDER BY ALL").fetchall()
        assert c2.execute("SELECT count(*) FILTER (WHERE harness_agrees), count(*) FROM runs").fetchall() == [(2, 2)]
    with store.read_connection(back) as con:
        again = {r["model"]: r for r in stats.accuracy_rows(stats.model_accuracy(con))}
    # the harness's number survives the trip (a mean of 1–5), the failures are the records' verdicts
    assert again[A]["headline"] == pytest.approx(538 / 120, abs=1e-12) and again[A]["failures"] == 1
    assert again[A]["analysis_rule"] == "failures: the log's own verdicts"


# ---------------------------------------------------------------- 2. the threshold is the analyst's knob


def test_cli_threshold_rejudges_without_reingesting(both_db, capsys):
    before = duckdb.connect(str(both_db), read_only=True)
    stored = before.execute("SELECT count(*) FILTER (WHERE NOT is_correct) FROM predictions").fetchall()
    before.close()
    rows = rows_by(both_db, "--threshold", "aci_bench=4.5")
    aci = rows[(A, "aci_bench")]
    assert aci["analysis_threshold"] == 4.5 and aci["failures"] == sum(s < 4.5 for s in ACI[A]) == 20
    assert aci["analysis_rule"] == "failures: score < 4.5 of 1–5 — set for this view, 0.875 of the range"
    assert aci["headline"] == pytest.approx(538 / 120, abs=1e-12)  # the harness's number does not move
    assert rows[(A, "med_dialog")]["analysis_threshold"] == 3.8  # another dataset keeps its line
    after = duckdb.connect(str(both_db), read_only=True)
    assert after.execute("SELECT count(*) FILTER (WHERE NOT is_correct) FROM predictions").fetchall() == stored
    after.close()


@pytest.mark.parametrize("arg, message", [
    ("aci_bench=9", "--threshold: aci_bench: 9 lies outside its scale 1–5"),
    ("mmlu=0.5", "--threshold: mmlu: no such dataset"),
    ("aci_bench", "--threshold 'aci_bench': expected DATASET=X with X a number, e.g. aci_bench=4.2"),
])
def test_cli_threshold_refuses_what_cannot_apply(both_db, capsys, arg, message):
    assert main(["accuracy", "--db", str(both_db), "--threshold", arg]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_a_binary_dataset_has_no_threshold_to_move(tmp_db, capsys):
    seed(tmp_db, [dict(model="m", dataset="mc", instance_id=f"q{i}", is_correct=i < 3,
                       run={"main_metric": "exact_match", "pass_threshold": 0.7, "metric_min": 0.0,
                            "metric_max": 1.0, "scale_source": "registry"}) for i in range(5)])
    assert main(["accuracy", "--db", str(tmp_db), "--threshold", "mc=0.5"]) == 2
    assert "mc: the threshold cannot be moved (exact_match is 0/1: pass = correct)" in capsys.readouterr().err
    row = rows_by(tmp_db)[("m", "mc")]
    assert (row["headline_kind"], row["headline"], row["accuracy"], row["analysis_rule"]) == (
        "pass rate", 0.6, 0.6, "failures: exact_match = 0 (pass = correct)")


def _jury_rows(model: str, scores: list[float], labelled: set[int]) -> list[dict]:
    run = {"main_metric": "jury", "pass_threshold": 3.8, "metric_min": 1.0, "metric_max": 5.0,
           "scale_source": "helm display name", "lower_is_better": False}
    return [dict(model=model, dataset="notes", instance_id=f"q{i}", score=s, is_correct=s >= 3.8, run=run,
                 **({"title": f"t{i}", "category": "Incomplete Content" if i % 2 else "Factual Error"}
                    if i in labelled and s < 3.8 else {}))
            for i, s in enumerate(scores)]


JURY_A = [2.0, 3.0, 3.5, 3.7, 3.9, 4.1, 4.3, 4.6, 5.0, 4.0]
JURY_B = [3.0, 3.2, 4.2, 3.6, 3.6, 4.4, 4.8, 3.7, 4.1, 2.5]


def test_moving_the_line_keeps_analyses_with_their_predictions(tmp_db):
    # A's failures under 3.8 are q0–q3, all analysed; B's are q0, q1, q3, q4, q7, q9, none analysed
    seed(tmp_db, _jury_rows("A", JURY_A, {0, 1, 2, 3}) + _jury_rows("B", JURY_B, set()))
    with store.read_connection(tmp_db) as con:
        def labels(thresholds):
            sig = stats.signature(con, "offline", ["A"], thresholds=thresholds)
            return dict(zip(sig["category"], sig["count"]))

        assert labels(None) == {"Factual Error": 2, "Incomplete Content": 2}
        # down to 3.4: q2 (3.5) and q3 (3.7) pass now — their labels are set aside, not deleted
        assert labels({"notes": 3.4}) == {"Factual Error": 1, "Incomplete Content": 1}
        # up to 4.2: q4, q5, q9 fail now; no analysis can exist for them yet
        assert labels({"notes": 4.2}) == {"Factual Error": 2, "Incomplete Content": 2}
        moved = store.queries.moved_verdicts(con, {"notes": 4.2}, models=["A"])
        assert moved.rows() == [("notes", 3, 0)]
        failed = store.queries.instance_list(con, "offline", ["A"], outcome="failed", thresholds={"notes": 4.2})
        assert sorted(failed["instance_id"]) == ["q0", "q1", "q2", "q3", "q4", "q5", "q9"]
        assert failed.filter(failed["category"].is_null())["instance_id"].sort().to_list() == ["q4", "q5", "q9"]
        detail = {d["model"]: d for d in store.queries.instance_detail(con, "notes", "q4", "offline",
                                                                        thresholds={"notes": 4.2})}
        assert (detail["A"]["is_correct"], detail["A"]["stored_correct"], detail["A"]["error_title"]) == (
            False, True, None)
        # the paired test follows the line too
        c = stats.compare(con, "A", "B", thresholds={"notes": 4.2})
        a_fail = [s < 4.2 for s in JURY_A]
        b_fail = [s < 4.2 for s in JURY_B]
        assert (c.a_only_fail, c.b_only_fail) == (
            sum(x and not y for x, y in zip(a_fail, b_fail)), sum(y and not x for x, y in zip(a_fail, b_fail)))
    stored = duckdb.connect(str(tmp_db), read_only=True)
    assert stored.execute("SELECT count(*) FROM analyses").fetchall() == [(4,)]
    stored.close()


# ---------------------------------------------------------------- 3. paired tests on what was measured


def _bootstrap(d: np.ndarray) -> tuple[float, float]:
    """The stated procedure, written out with numpy: one draw of all indices from the seed."""
    rng = np.random.default_rng(20260601)
    means = d[rng.integers(0, len(d), size=(2000, len(d)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _ordered(scores: dict[str, list[float]]) -> np.ndarray:
    """B − A in the documented order: by question id (as text), as the store pairs them."""
    ids = sorted(f"id{i}" for i in range(len(scores[A])))
    return np.array([scores[B][int(i[2:])] - scores[A][int(i[2:])] for i in ids])


def test_wilcoxon_and_bootstrap_equal_scipy_and_numpy(both_db, capsys):
    assert main(["compare", A, B, "--db", str(both_db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    by = {d["dataset"]: d for d in data["by_dataset"]}
    for dataset, planted in (("aci_bench", ACI), ("narrative_qa", NARRATIVE), ("wmt_14", WMT)):
        d = _ordered(planted)
        sc = by[dataset]["scores"]
        assert sc["n"] == len(d) and sc["mean_difference"] == pytest.approx(d.mean(), abs=1e-15)
        assert sc["wilcoxon_p"] == sst.wilcoxon(d, zero_method="wilcox").pvalue
        assert sc["wilcoxon_n"] == int(np.count_nonzero(d))
        assert (sc["bootstrap_ci_low"], sc["bootstrap_ci_high"]) == _bootstrap(d)
        assert (sc["bootstrap_seed"], sc["bootstrap_replicates"], sc["zero_method"]) == (20260601, 2000, "wilcox")
    # per dataset McNemar on the verdicts, as before
    a_fail, b_fail = [s < 3.8 for s in ACI[A]], [s < 3.8 for s in ACI[B]]
    n10 = sum(x and not y for x, y in zip(a_fail, b_fail))
    n01 = sum(y and not x for x, y in zip(a_fail, b_fail))
    mcnemar = by["aci_bench"]["mcnemar"]
    assert {k: mcnemar[k] for k in ("a_only_fail", "b_only_fail", "p")} == {
        "a_only_fail": n10, "b_only_fail": n01, "p": sst.binomtest(n10, n10 + n01, 0.5).pvalue}
    # q: Benjamini–Hochberg over the datasets' McNemar tests; mde: what the test could detect
    ps = [d["mcnemar"]["p"] for d in data["by_dataset"]]
    assert [d["mcnemar"]["q"] for d in data["by_dataset"]] == pytest.approx(list(sst.false_discovery_control(ps)))
    assert mcnemar["mde"] == mcnemar_mde(by["aci_bench"]["n_pairs"], (n10 + n01) / by["aci_bench"]["n_pairs"])


def test_the_bootstrap_draws_in_blocks_what_one_draw_would():
    d = np.random.default_rng(3).normal(size=3001)
    mean, low, high = t.paired_bootstrap(d)
    assert (low, high) == _bootstrap(d) and mean == d.mean()
    assert t.wilcoxon_signed_rank(np.zeros(4)) == (1.0, 0)  # nothing to rank


def test_sensitivity_strip_at_half_seven_and_nine_tenths_of_the_range(both_db):
    with store.read_connection(both_db) as con:
        c = stats.compare(con, A, B)
    strip = {x.share: x for x in next(d for d in c.by_dataset if d.dataset == "aci_bench").sensitivity}
    assert sorted(strip) == [0.5, 0.7, 0.9]
    for share, line in ((0.5, 3.0), (0.7, 3.8), (0.9, 4.6)):
        a = [s < line for s in ACI[A]]
        b = [s < line for s in ACI[B]]
        n10, n01 = sum(x and not y for x, y in zip(a, b)), sum(y and not x for x, y in zip(a, b))
        x = strip[share]
        assert (x.line, x.a_failures, x.b_failures, x.a_only_fail, x.b_only_fail) == (line, sum(a), sum(b), n10, n01)
        assert x.p == (sst.binomtest(n10, n10 + n01, 0.5).pvalue if n10 + n01 else 1.0)


def _mixed_store(db) -> None:
    """A and B both answer `shared` (100 questions); only B answers `extra` (100 questions), and
    most of B's failures there are Incomplete Content — the issue's MedHELM + Lite gap."""
    rows = []
    for i in range(100):
        a_fail, b_fail = i < 40, 20 <= i < 65
        a_cat = "Incomplete Content" if i < 4 else "Reasoning Error"
        b_cat = "Incomplete Content" if 20 <= i < 25 else "Reasoning Error"
        rows.append(dict(model="A", dataset="shared", instance_id=f"s{i}", is_correct=not a_fail,
                         **({"title": f"a {a_cat}", "category": a_cat} if a_fail else {})))
        rows.append(dict(model="B", dataset="shared", instance_id=f"s{i}", is_correct=not b_fail,
                         **({"title": f"b {b_cat}", "category": b_cat} if b_fail else {})))
        extra_fail = i < 80
        extra_cat = "Incomplete Content" if i < 60 else "Reasoning Error"
        rows.append(dict(model="B", dataset="extra", instance_id=f"x{i}", is_correct=not extra_fail,
                         **({"title": f"x {extra_cat}", "category": extra_cat} if extra_fail else {})))
    seed(db, rows)


def test_error_types_are_compared_on_the_paired_questions(tmp_db, capsys):
    _mixed_store(tmp_db)
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--json"]) == 0
    paired = json.loads(capsys.readouterr().out)
    cats = {c["category"]: c for c in paired["categories"]}
    # on the 100 questions both answered: A 4 of 40, B 5 of 45 — no difference
    assert (paired["n_pairs"], paired["a_total"], paired["b_total"]) == (100, 40, 45)
    ic = cats["Incomplete Content"]
    assert (ic["a_count"], ic["b_count"]) == (4, 5)
    assert ic["p_fisher"] == sst.fisher_exact([[4, 36], [5, 40]]).pvalue
    rest = sst.fisher_exact([[36, 4], [40, 5]]).pvalue
    assert ic["q_bh"] == pytest.approx(sst.false_discovery_control([ic["p_fisher"], rest])[0], rel=1e-12)
    assert paired["error_types_on"] == "paired questions" and paired["mixes_differ"] is True
    assert paired["mix"] == [
        {"dataset": "extra", "a_failures": 0, "b_failures": 80, "a_paired": 0, "b_paired": 0},
        {"dataset": "shared", "a_failures": 40, "b_failures": 45, "a_paired": 40, "b_paired": 45}]
    # every failure (the old count): 4 of 40 vs 65 of 125 — a "difference" made by B's extra dataset
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--json", "--unpaired"]) == 0
    unpaired = json.loads(capsys.readouterr().out)
    ic = {c["category"]: c for c in unpaired["categories"]}["Incomplete Content"]
    assert (unpaired["a_total"], unpaired["b_total"], ic["a_count"], ic["b_count"]) == (40, 125, 4, 65)
    assert ic["p_fisher"] == sst.fisher_exact([[4, 36], [65, 60]]).pvalue < 1e-5
    # the readable output says where the failures lie
    assert main(["compare", "A", "B", "--db", str(tmp_db)]) == 0
    text = capsys.readouterr().out
    assert ("note: the two models' labelled failures come from different question sets: A 40 of 40 on "
            "questions both answered (others: none), B 45 of 125 (others: extra 80); error types are "
            "compared on the paired questions only") in text


def test_compare_page_shows_the_cli_numbers_and_the_mix(tmp_db, monkeypatch, capsys):
    _mixed_store(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.query_params.update(a="A", b="B")
    at.run()
    assert not at.exception
    assert any("different question sets" in w.value and "extra 80" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "q_text" in d.value.columns)
    ic = table[table["category"] == "Incomplete Content"].iloc[0]
    assert (ic["a_count"], ic["b_count"], ic["a_share"], ic["b_share"]) == (4, 5, "10.0%", "11.1%")
    assert ic["p_fisher_text"] == fmt.p_value(sst.fisher_exact([[4, 36], [5, 40]]).pvalue)
    # ticking "every analysed failure" is the CLI's --unpaired, and the link keeps it
    at.checkbox(key="failures").check().run()
    table = next(d.value for d in at.dataframe if "q_text" in d.value.columns)
    ic = table[table["category"] == "Incomplete Content"].iloc[0]
    assert (ic["a_count"], ic["b_count"]) == (4, 65) and "failures=true" in at.code[0].value


def test_overview_and_compare_pages_on_the_jury_and_lite_suites(both_db, monkeypatch):
    monkeypatch.setenv("FAULTLINE_DB", str(both_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "harness" in d.value.columns)
    got = {(r.model, r.dataset): (r.harness, r.harness_ci, r.threshold_failures) for r in table.itertuples()}
    assert got[(A, "aci_bench")] == ("4.48 of 1–5", "4.35–4.62 (t)", "1 (2.5%)")
    assert got[(A, "med_dialog")][1].endswith("(t by domain)")
    assert got[(A, "wmt_14")] == ("0.037 of 0–1", "0.027–0.047 (t)", "30 (100.0%)")
    assert "97.5%" not in json.dumps([d.value.to_dict() for d in at.dataframe])
    assert any(md("failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range") in c.value for c in at.caption)
    # the sensitivity strip: failures at 0.5, 0.7 and 0.9 of the range
    strip = next(d.value for d in at.dataframe if "at 0.7" in d.value.columns)
    a_row = strip[(strip["model"] == A) & (strip["dataset"] == "aci_bench")].iloc[0]
    assert a_row["lines"] == "< 3 · < 3.8 · < 4.6"
    assert (a_row["at 0.5"], a_row["at 0.7"]) == ("0 (0.0%)", "1 (2.5%) ◀")
    assert a_row["at 0.9"] == f"{sum(s < 4.6 for s in ACI[A])} ({fmt.pct(sum(s < 4.6 for s in ACI[A]) / 40)})"
    # moving the knob: the URL keeps it, the failures follow, the harness's number does not move
    at.number_input(key="threshold:aci_bench").set_value(4.5).run()
    assert at.query_params["threshold"] == "aci_bench:4.5"
    table = next(d.value for d in at.dataframe if "harness" in d.value.columns)
    row = table[(table["model"] == A) & (table["dataset"] == "aci_bench")].iloc[0]
    assert (row["harness"], row["threshold_failures"]) == ("4.48 of 1–5", "20 (50.0%)")
    strip = next(d.value for d in at.dataframe if "at 0.7" in d.value.columns)
    a_row = strip[(strip["model"] == A) & (strip["dataset"] == "aci_bench")].iloc[0]
    assert (a_row["lines"], a_row["moved"]) == ("< 3 · < 3.8 · < 4.6 · < 4.5", "20 (50.0%) ◀")
    assert "threshold=aci_bench%3A4.5" in at.code[0].value
    # a shared link reproduces it
    again = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    again.query_params.update(threshold="aci_bench:4.5")
    again.run()
    assert again.number_input(key="threshold:aci_bench").value == 4.5
    # /compare: per dataset, the same numbers as stats compare
    page = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    page.switch_page("pages/compare.py")
    page.query_params.update(a=A, b=B)
    page.run()
    assert not page.exception
    # every dataset is continuous: it leads with the tests on the scores, each dataset once, and
    # no McNemar test over all of them; the thresholded failures' McNemar tests sit apart
    scores = next(d.value for d in page.dataframe if "wilcoxon" in d.value.columns).set_index("dataset")
    per = next(d.value for d in page.dataframe if "rule" in d.value.columns).set_index("dataset")
    with store.read_connection(both_db) as con:
        c = stats.compare(con, A, B)
    assert sorted(scores.index) == sorted(per.index) == sorted(d.dataset for d in c.by_dataset)
    for d in c.by_dataset:
        assert scores.loc[d.dataset, "wilcoxon"] == f"{fmt.p_value(d.scores.wilcoxon_p)} (n = {d.scores.wilcoxon_n})"
        assert per.loc[d.dataset, "p_text"] == fmt.p_value(d.p)
    assert scores.loc["aci_bench", "a_number"] == "4.48 of 1–5"
    assert scores.loc["aci_bench", "difference"] == "−1.15 (−1.27 to −1.03)"
    assert per.loc["aci_bench", "rule"] == "score < 3.8 of 1–5"
    assert "Overall: paired McNemar exact test" not in [h.value for h in page.subheader]
    assert not any("Only A fails" in m.label for m in page.metric)


@requires_fixtures
def test_mmlu_compare_is_unchanged_by_pairing_error_types(mmlu_db, capsys):
    """Both models answered every question: paired and unpaired error-type counts agree."""
    from tests.seed_store import label_failures

    label_failures(mmlu_db, ["Reasoning Error", "Factual Error", "Hard to Analyze"])
    a, b = "groq/llama3-8b-8192", "together/Llama-3-70b-chat-hf"
    assert main(["compare", a, b, "--db", str(mmlu_db), "--json"]) == 0
    paired = json.loads(capsys.readouterr().out)
    assert main(["compare", a, b, "--db", str(mmlu_db), "--json", "--unpaired"]) == 0
    unpaired = json.loads(capsys.readouterr().out)
    assert paired["categories"] == unpaired["categories"] and paired["mixes_differ"] is False


def test_inspect_partial_credit_mean_is_the_headline(tmp_path, tmp_db, capsys):
    """C 1, P 0.5, I 0 (Inspect's value_to_float): the harness's accuracy is the mean credit,
    15.5 of 26 = 59.6%; the 50.0% that pass ErrorMap's 0.7 line are the failures, apart."""
    import zipfile

    values = ["C"] * 13 + ["P"] * 5 + ["I"] * 8
    header = {"version": 2, "status": "success",
              "eval": {"task": "toy", "task_id": "T1", "run_id": "R1", "model": "m/one"},
              "results": {"total_samples": 26, "completed_samples": 26,
                          "scores": [{"name": "grader", "metrics": {"accuracy": {"name": "accuracy", "value": 15.5 / 26}}}]}}
    log = tmp_path / "toy.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for i, v in enumerate(values):
            archive.writestr(f"samples/{i}_epoch_1.json", json.dumps({
                "id": i, "epoch": 1, "input": f"question {i}", "target": "x",
                "output": {"completion": f"answer {i}"}, "scores": {"grader": {"value": v}}}))
    ingest_paths([log], db=tmp_db)
    row = rows_by(tmp_db)[("m/one", "toy")]
    assert row["headline"] == 15.5 / 26 and row["headline_kind"] == "mean score"
    assert stats.headline.headline_text(row) == "59.6%"
    assert (row["failures"], row["failure_rate"], row["accuracy"]) == (13, 0.5, None)
    assert row["analysis_rule"] == "failures: score < 0.7 of 0–1 — ErrorMap's 0.7 of the range"


def test_compare_page_tests_one_datasets_error_types_as_the_cli_does(tmp_db, monkeypatch, capsys):
    rows = []
    for dataset, (a_fails, b_fails) in {"d1": (range(0, 12), range(6, 20)), "d2": (range(0, 5), range(0, 16))}.items():
        for i in range(30):
            for model, fails in (("A", a_fails), ("B", b_fails)):
                failed = i in fails
                cat = ("Refusal" if i % 3 == 0 else "Factual Error") if model == "B" else (
                    "Factual Error" if i % 2 else "Calculation Error")
                rows.append(dict(model=model, dataset=dataset, instance_id=f"q{i}", is_correct=not failed,
                                 **({"title": f"{model} {cat}", "category": cat} if failed else {})))
    seed(tmp_db, rows)
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--json"]) == 0
    d2 = {d["dataset"]: d for d in json.loads(capsys.readouterr().out)["by_dataset"]}["d2"]
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/compare.py")
    at.query_params.update(a="A", b="B")
    at.run()
    at.selectbox(key="types_dataset").select("d2").run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "q_text" in d.value.columns]
    one = tables[-1].set_index("category")
    for c in d2["categories"]:
        assert (one.loc[c["category"], "a_count"], one.loc[c["category"], "b_count"]) == (c["a_count"], c["b_count"])
        assert one.loc[c["category"], "q_text"] == fmt.p_value(c["q_bh"])
        assert one.loc[c["category"], "p_fisher_text"] == fmt.p_value(c["p_fisher"])


def test_report_shows_both_numbers_and_the_paired_score_tests(both_db, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(both_db), "--out", str(out), "--threshold", "aci_bench=4.5"]) == 0
    html = out.read_text()
    assert "<h3 class=dataset>aci_bench</h3>" in html
    # the harness's number in its scale, the failures apart, the rule beside them
    assert "<td>4.48 of 1–5</td><td>4.35–4.62</td><td>t</td><td>20 (50.0%, 95% 35–65%)</td>" in html
    assert "failures: score &lt; 4.5 of 1–5 — set for this view, 0.875 of the range." in html
    assert "analysis thresholds set for this report: aci_bench 4.5" in html
    assert "97.5%" not in html
    # the pairwise comparison carries the paired score tests per dataset
    with store.read_connection(both_db) as con:
        c = stats.compare(con, A, B, thresholds={"aci_bench": 4.5})
    aci = next(d for d in c.by_dataset if d.dataset == "aci_bench")
    assert f"Wilcoxon signed-rank p = {fmt.p_value(aci.scores.wilcoxon_p)}" in html
    assert "failures at 4.5 (the line in use): A 20, B 40" in html
