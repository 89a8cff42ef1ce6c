"""Which leaderboard ranks differ (stats/leaderboard.py), on generated HELM suites of known
structure: a Lite-shaped one (MMLU-style exact match, and NarrativeQA-style F1 on questions that
share stories — clustered) and a MedHELM-shaped one (ACI-Bench 1–5 jury means). The adjacent
p-values equal scipy's (McNemar's binomial test, the Wilcoxon) and statsmodels' (cluster-robust)
on the planted scores, and BH across the ladder equals scipy's false_discovery_control."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats as st

from tests.helm_gen import Case, Run, write_run

# planted abilities: pairs close together, steps between them
LITE = {"lab/alpha-l": 0.86, "lab/alpha-m": 0.84, "lab/beta-l": 0.66, "lab/beta-m": 0.64,
        "lab/gamma-l": 0.42, "lab/gamma-m": 0.40}
MED = {"med/one": 4.3, "med/two": 4.25, "med/three": 3.6, "med/four": 3.1, "med/five": 3.05}
STORIES, PER_STORY, MMLU_N, ACI_N = 25, 4, 200, 60


def _lite_scores(rng) -> tuple[dict, dict]:
    """Per model: 0/1 exact match on MMLU_N questions, and F1 on STORIES × PER_STORY questions whose
    story's difficulty moves every model."""
    mmlu = {m: (rng.random(MMLU_N) < p).astype(float) for m, p in LITE.items()}
    hard = rng.normal(0, 0.25, size=STORIES)
    f1 = {m: np.clip(np.round(p - 0.2 + np.repeat(hard, PER_STORY) + rng.normal(0, 0.15, STORIES * PER_STORY), 2),
                     0, 1) for m, p in LITE.items()}
    return mmlu, f1


def _story(k: int) -> str:
    return f"Story {k}. " + f"In the year {1800 + k} the ship sailed from harbour {k} and " * 12


def lite_suite(root, rng):
    suite = root / "lite" / "benchmark_output" / "runs" / "v1"
    suite.mkdir(parents=True)
    mmlu, f1 = _lite_scores(rng)
    for model in LITE:
        write_run(suite, Run("mmlu", model, ["mmlu"], [
            Case(id=f"m{i}", question=f"MMLU question {i}?", output="A", stats={"exact_match": v})
            for i, v in enumerate(mmlu[model])], args={"subject": "anatomy"}))
        write_run(suite, Run("narrative_qa", model, ["narrative_qa"], [
            Case(id=f"n{i}", question=_story(i // PER_STORY) + f"\nQuestion: what happened in part {i}?",
                 output="an answer", stats={"f1_score": float(v)}) for i, v in enumerate(f1[model])]))
    return suite, mmlu, f1


def med_suite(root, rng):
    suite = root / "medhelm" / "benchmark_output" / "runs" / "v1"
    suite.mkdir(parents=True)
    scores = {m: np.clip(np.round(rng.normal(mu, 0.5, ACI_N) * 3) / 3, 1, 5) for m, mu in MED.items()}
    for model in MED:
        write_run(suite, Run("aci_bench", model, ["aci_bench"], [
            Case(id=f"a{i}", question=f"Write the clinical note for visit {i}.", output="note",
                 stats={"aci_bench_accuracy": float(v)}) for i, v in enumerate(scores[model])]))
    return suite, scores


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    from ingest.cli import main as ingest_main

    root = tmp_path_factory.mktemp("ladders")
    rng = np.random.default_rng(20261129)
    lite, mmlu, f1 = lite_suite(root, rng)
    med, aci = med_suite(root, rng)
    dbs = {"lite": str(root / "lite.duckdb"), "med": str(root / "med.duckdb")}
    assert ingest_main([str(lite), "--db", dbs["lite"]]) == 0
    assert ingest_main([str(med), "--db", dbs["med"]]) == 0
    return dbs, mmlu, f1, aci


def _ladder(capsys, db: str, dataset: str) -> dict:
    from stats.cli import main as stats_main

    capsys.readouterr()
    assert stats_main(["leaderboard", "--db", db, "--dataset", dataset, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_pass_fail_ladder_is_tested_by_mcnemar_and_grouped_by_bh(stores, capsys):
    dbs, mmlu, _, _ = stores
    out = _ladder(capsys, dbs["lite"], "mmlu")
    order = sorted(LITE, key=lambda m: (-mmlu[m].mean(), m))
    assert [r["model"] for r in out["models"]] == order
    assert [r["rank"] for r in out["models"]] == list(range(1, 7))
    assert [r["headline"] for r in out["models"]] == pytest.approx([mmlu[m].mean() for m in order])
    ps = []
    for step, (a, b) in zip(out["adjacent"], zip(order, order[1:])):
        a_only = int(np.sum((mmlu[a] == 0) & (mmlu[b] == 1)))
        b_only = int(np.sum((mmlu[a] == 1) & (mmlu[b] == 0)))
        ps.append(st.binomtest(a_only, a_only + b_only, 0.5).pvalue)
        assert (step["a"], step["b"], step["n"], step["test"], step["clusters"]) == (a, b, MMLU_N, "McNemar exact", None)
        assert step["mde"] is not None
    assert [s["p"] for s in out["adjacent"]] == pytest.approx(ps, rel=1e-12)
    assert [s["q"] for s in out["adjacent"]] == pytest.approx(list(st.false_discovery_control(ps)), rel=1e-12)
    # a new group below each step whose q ≤ 0.05
    group, expected = 1, [1]
    for qv in st.false_discovery_control(ps):
        group += qv <= 0.05
        expected.append(group)
    assert [r["group"] for r in out["models"]] == expected
    assert expected == [1, 1, 2, 2, 3, 3]  # the planted steps are found, the planted pairs are not split


def test_questions_sharing_a_story_are_tested_with_clusters(stores, capsys):
    sm = pytest.importorskip("statsmodels.api")
    dbs, _, f1, _ = stores
    out = _ladder(capsys, dbs["lite"], "narrative_qa")
    order = [r["model"] for r in out["models"]]
    assert order == sorted(LITE, key=lambda m: (-f1[m].mean(), m))
    groups = np.repeat(np.arange(STORIES), PER_STORY)
    for step in out["adjacent"]:
        d = f1[step["b"]] - f1[step["a"]]
        ref = sm.OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
        assert step["test"] == "cluster-robust paired t"
        assert step["clusters"] == STORIES and step["n"] == STORIES * PER_STORY
        assert step["p"] == pytest.approx(float(ref.pvalues[0]), rel=1e-9)


def test_a_medhelm_jury_ladder_is_tested_by_wilcoxon(stores, capsys):
    dbs, _, _, aci = stores
    out = _ladder(capsys, dbs["med"], "aci_bench")
    order = sorted(MED, key=lambda m: (-aci[m].mean(), m))
    assert [r["model"] for r in out["models"]] == order
    ps = [st.wilcoxon(aci[b] - aci[a], zero_method="wilcox").pvalue for a, b in zip(order, order[1:])]
    assert [s["test"] for s in out["adjacent"]] == ["Wilcoxon signed-rank"] * 4
    assert [s["p"] for s in out["adjacent"]] == pytest.approx(ps, rel=1e-12)
    assert [s["q"] for s in out["adjacent"]] == pytest.approx(list(st.false_discovery_control(ps)), rel=1e-12)


def test_the_leaderboard_command_without_a_dataset_gives_every_ladder(stores, capsys):
    from stats.cli import main as stats_main

    dbs = stores[0]
    capsys.readouterr()
    assert stats_main(["leaderboard", "--db", dbs["lite"]]) == 0
    text = capsys.readouterr().out
    assert "mmlu:" in text and "narrative_qa:" in text and "[group 3]" in text
    assert "leaderboards of 2 datasets: 10 adjacent tests" in text


def test_the_harness_numbers_interval_is_cluster_robust_where_questions_share_a_story(stores):
    sm = pytest.importorskip("statsmodels.api")
    import store
    from stats.headline import model_accuracy

    dbs, mmlu, f1, _ = stores
    with store.read_connection(dbs["lite"]) as con:
        acc = model_accuracy(con)
    groups = np.repeat(np.arange(STORIES), PER_STORY)
    for r in acc.filter(acc["dataset"] == "narrative_qa").iter_rows(named=True):
        ref = sm.OLS(f1[r["model"]], np.ones(len(groups))).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                                                use_t=True)
        assert (r["headline_interval"], r["clusters"]) == ("cluster-robust t", STORIES)
        assert [r["headline_ci_low"], r["headline_ci_high"]] == pytest.approx(list(ref.conf_int()[0]), rel=1e-9)
    # questions on their own keep the exact interval
    assert set(acc.filter(acc["dataset"] == "mmlu")["headline_interval"]) == {"Wilson"}
    assert acc.filter(acc["dataset"] == "mmlu")["clusters"].null_count() == 6
