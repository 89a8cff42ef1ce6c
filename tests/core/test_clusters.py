"""Clustered questions (core/clustered.py, core/passages.py, stats/clusters.py): the cluster-robust
estimator equals statsmodels' and the t test on cluster means, covers where the naive interval does
not, its MDE has the power it claims, and a comparison on clustered questions uses it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as st

from core.clustered import ClusteredMean, clustered_mde, clustered_mean, clustered_paired, has_clusters
from core.passages import MIN_PASSAGE_CHARS, passage_clusters
from core.significance import wilson


def test_the_cluster_robust_mean_equals_statsmodels_with_unequal_clusters():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(25), rng.integers(1, 8, 25))
    x = rng.normal(size=len(groups)) + (groups % 4) * 0.5
    mine = clustered_mean(x, groups)
    ref = sm.OLS(x, np.ones(len(x))).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    assert mine.clusters == 25 and mine.n == len(x)
    assert mine.mean == pytest.approx(float(ref.params[0]), rel=1e-12)
    assert mine.se == pytest.approx(float(ref.bse[0]), rel=1e-10)
    assert mine.p == pytest.approx(float(ref.pvalues[0]), rel=1e-9)
    assert [mine.low, mine.high] == pytest.approx(list(ref.conf_int()[0]), rel=1e-10)


def test_equal_clusters_are_the_t_test_on_cluster_means_and_singletons_the_paired_t():
    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 1, size=(30, 4))
    mine = clustered_paired(d.ravel(), np.repeat(np.arange(30), 4))
    assert mine.p == pytest.approx(st.ttest_1samp(d.mean(axis=1), 0).pvalue, rel=1e-10)
    a, b = rng.normal(size=50), rng.normal(0.3, 1, size=50)
    alone = clustered_paired(b - a, np.arange(50))
    assert alone.clusters == 50
    assert alone.p == pytest.approx(st.ttest_rel(b, a).pvalue, rel=1e-10)


def test_has_clusters():
    assert not has_clusters(["a", "b", "c"])
    assert has_clusters(["a", "a", "c"])
    assert has_clusters(["a", "b"], trials=[1, 3])
    assert not has_clusters(["a", "b"], trials=[1, 1])


def _clustered_pass_fail(rng, g: int, m: int, mean: float, icc: float) -> tuple[np.ndarray, np.ndarray]:
    """g clusters of m pass/fail outcomes: each cluster's pass rate ~ Beta with this mean and
    intra-cluster correlation (Beta-binomial: icc = 1 / (a + b + 1))."""
    total = 1 / icc - 1
    rates = rng.beta(mean * total, (1 - mean) * total, size=g)
    return (rng.random((g, m)) < rates[:, None]).astype(float).ravel(), np.repeat(np.arange(g), m)


def test_the_clustered_interval_covers_where_the_naive_one_does_not():
    """1,000 seeded datasets of 40 passages × 5 questions, intra-passage correlation 0.3, true pass
    rate 0.6: Wilson's interval (questions taken as independent) misses far more than 5% of the
    time; the cluster-robust one covers within ±3 points of 95%."""
    rng = np.random.default_rng(20261129)
    naive = robust = 0
    seeds = 1000
    for _ in range(seeds):
        x, groups = _clustered_pass_fail(rng, 40, 5, 0.6, 0.3)
        low, high = wilson(int(x.sum()), len(x))
        naive += low <= 0.6 <= high
        r = clustered_mean(x, groups)
        robust += r.low <= 0.6 <= r.high
    assert naive / seeds < 0.85
    assert abs(robust / seeds - 0.95) <= 0.03


def _two_models(rng, g: int = 50, m: int = 4) -> np.ndarray:
    """Per question, B's pass minus A's on g passages × m questions: the passage's difficulty moves
    both models, and B's edge over A is itself a passage-level amount, so the differences cluster."""
    hard = rng.normal(0, 1.2, size=g)
    own = rng.normal(0, 0.3, size=(g, m))
    a = (rng.random((g, m)) < 1 / (1 + np.exp(-(0.3 + hard[:, None] + own)))).astype(float)
    shift = rng.normal(0.1, 0.25, size=g)[:, None]
    b = np.clip(a + (rng.random((g, m)) < np.abs(shift)) * np.sign(shift), 0, 1)
    return (b - a).ravel()


def test_the_clustered_paired_test_covers_the_difference_of_two_models():
    """1,000 seeded datasets of two models on 50 passages × 4 questions: the paired interval that
    takes questions as independent under-covers the mean difference; the clustered one covers
    within ±3 points of 95%. The true difference is that of the design, by a large simulation."""
    rng = np.random.default_rng(12)
    target = float(np.mean([_two_models(rng).mean() for _ in range(4000)]))
    rng = np.random.default_rng(11)
    naive = robust = 0
    seeds = 1000
    groups = np.repeat(np.arange(50), 4)
    for _ in range(seeds):
        d = _two_models(rng)
        n = clustered_paired(d, np.arange(len(d)))
        r = clustered_paired(d, groups)
        naive += n.low <= target <= n.high
        robust += r.low <= target <= r.high
    assert naive / seeds < 0.90
    assert abs(robust / seeds - 0.95) <= 0.03


def test_the_clustered_mde_has_the_power_it_claims_in_simulation():
    """20 clusters whose mean differences are normal with sd 0.5: the t on cluster means has
    noncentral-t power, and at the MDE of the expected standard error 80% ± 2 of 4,000 seeded
    datasets reject."""
    g, sd = 20, 0.5
    mde = clustered_mde(ClusteredMean(n=g * 3, clusters=g, mean=0.0, se=sd / math.sqrt(g), low=math.nan,
                                      high=math.nan, t=math.nan, p=math.nan))
    rng = np.random.default_rng(5)
    sims = 4000
    means = rng.normal(mde, sd, size=(sims, g))
    p = st.ttest_1samp(means, 0, axis=1).pvalue
    assert abs(float(np.mean(p <= 0.05)) - 0.8) <= 0.02


def test_questions_on_one_passage_share_a_cluster():
    story = "Once upon a time " + "the river ran north and the town slept. " * 20
    other = "In a distant valley " + "the wind carried the sound of bells. " * 20
    assert len(story) >= MIN_PASSAGE_CHARS
    inputs = {"q1": story + "\nQuestion: Where did the river run?", "q2": story + "\nQuestion: Who slept?",
              "q3": other + "\nQuestion: What did the wind carry?", "q4": "What is 2 + 2?",
              "q5": other + "\nQuestion: Where is the valley?", "q6": None}
    found = passage_clusters(inputs)
    assert set(found) == {"q1", "q2", "q3", "q5"}
    assert found["q1"] == found["q2"] != found["q3"] == found["q5"]
    # a run holding only some of a passage's questions names the passage the same
    assert passage_clusters({"x": inputs["q1"], "y": story + "\nQuestion: When?"})["x"] == found["q1"]
    # a prompt template's shared instructions are not a passage
    template = "Use indirect truth tables to determine whether the following argument is valid. " * 3
    assert passage_clusters({"a": template + "P ⊃ Q", "b": template + "R ∨ S"}) == {}


def _clustered_table(path, rng) -> tuple[list[float], list[str]]:
    """Two models on 30 passages × 4 questions in a custom CSV with a `cluster` column; returns the
    per-question failure differences (B − A) and their clusters, for the reference computation."""
    rows, diffs, clusters = ["model,instance_id,output,correct,cluster,dataset"], [], []
    for g in range(30):
        hard = rng.random() < 0.4
        for k in range(4):
            qid = f"p{g}-q{k}"
            a_ok = rng.random() < (0.3 if hard else 0.85)
            b_ok = rng.random() < (0.15 if hard else 0.75)
            rows.append(f"m-a,{qid},answer,{str(a_ok).lower()},passage-{g},rc")
            rows.append(f"m-b,{qid},answer,{str(b_ok).lower()},passage-{g},rc")
            diffs.append(float(a_ok) - float(b_ok))  # failure rate B − A
            clusters.append(f"passage-{g}")
    path.write_text("\n".join(rows) + "\n")
    return diffs, clusters


def test_a_comparison_on_clustered_questions_uses_the_clustered_test(tmp_path, capsys):
    sm = pytest.importorskip("statsmodels.api")
    from ingest.cli import main as ingest_main
    from stats.cli import main as stats_main

    diffs, clusters = _clustered_table(tmp_path / "rc.csv", np.random.default_rng(9))
    db = str(tmp_path / "s.duckdb")
    assert ingest_main([str(tmp_path / "rc.csv"), "--db", db]) == 0
    capsys.readouterr()
    assert stats_main(["compare", "m-a", "m-b", "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    ref = sm.OLS(np.array(diffs), np.ones(len(diffs))).fit(
        cov_type="cluster", cov_kwds={"groups": np.unique(clusters, return_inverse=True)[1]}, use_t=True)
    for part in (data["mcnemar"], data["by_dataset"][0]["mcnemar"]):
        assert part["test"] == "cluster-robust paired t"
        assert part["clusters"] == 30
        assert part["p"] == pytest.approx(float(ref.pvalues[0]), rel=1e-9)
        assert part["clustered"]["difference"] == pytest.approx(float(np.mean(diffs)), rel=1e-12)
        assert part["clustered"]["se"] == pytest.approx(float(ref.bse[0]), rel=1e-10)
        assert part["clustered"]["clusters_are"] == "clusters given in the log"
        assert part["mde"] is not None and part["mde"] > 0


def _epochs_log(path, model: str, passes: np.ndarray) -> None:
    """An Inspect .eval of len(passes) samples × passes.shape[1] epochs, as Inspect writes it."""
    import zipfile

    header = {"version": 2, "status": "success",
              "eval": {"task": "toy", "task_id": "T1", "run_id": f"R-{model}", "model": model,
                       "config": {"epochs": int(passes.shape[1])}},
              "results": {"scores": [{"name": "grader", "metrics": {
                  "accuracy": {"name": "accuracy", "value": float(passes.mean())}}}]}}
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", json.dumps(header))
        for i, row in enumerate(passes):
            for e, ok in enumerate(row):
                sample = {"id": i + 1, "epoch": e + 1, "input": f"Question {i + 1}?", "target": "4",
                          "output": {"choices": [{"message": {"role": "assistant", "content": "4" if ok else "5"}}]},
                          "scores": {"grader": {"value": "C" if ok else "I", "answer": "4" if ok else "5"}}}
                archive.writestr(f"samples/{i + 1}_epoch_{e + 1}.json", json.dumps(sample))


def test_inspect_epochs_cluster_by_sample_and_every_trial_is_weighed(tmp_path):
    """Two models, 20 samples × 3 epochs each: each sample's trials are one cluster, each model's
    result on a sample is its pass rate over the epochs, and the paired test is the t on the
    per-sample differences (every sample its own cluster) — scipy's one-sample t, exactly."""
    import store
    from ingest.load import ingest_paths
    from stats.compare import compare

    rng = np.random.default_rng(4)
    a = rng.random((20, 3)) < np.repeat(rng.uniform(0.3, 0.9, 20)[:, None], 3, axis=1)
    b = rng.random((20, 3)) < np.repeat(rng.uniform(0.1, 0.7, 20)[:, None], 3, axis=1)
    _epochs_log(tmp_path / "a.eval", "m/a", a)
    _epochs_log(tmp_path / "b.eval", "m/b", b)
    db = tmp_path / "s.duckdb"
    ingest_paths([tmp_path / "a.eval", tmp_path / "b.eval"], db=db)
    with store.read_connection(db) as con:
        c = compare(con, "m/a", "m/b")
    d = c.by_dataset[0]
    per_sample = a.mean(axis=1) - b.mean(axis=1)  # failure rate B − A
    assert (d.test, d.clusters, d.clustered.n, d.clustered.trials) == ("cluster-robust paired t", 20, 20, 120)
    assert d.clustered.kind == "repeated trials of a question"
    assert d.clustered.result.mean == pytest.approx(float(per_sample.mean()), rel=1e-12)
    assert d.p == pytest.approx(float(st.ttest_1samp(per_sample, 0).pvalue), rel=1e-10)
    assert c.clustered is not None and c.p == d.p


def test_an_lmeval_doc_field_names_the_cluster(tmp_path):
    """`--cluster gsm8k=passage_id`: each sample's doc field is its question's cluster; a sample
    without the field is an error naming it, and nothing is written."""
    import duckdb
    from lmeval_gen import STAMP, lmeval_results, lmeval_sample

    from ingest.cli import main as ingest_main

    folder = tmp_path / "org__model"
    folder.mkdir()
    rows = []
    for n in range(6):
        row = lmeval_sample(n, n % 2 == 0, "exact_match", "strict-match")
        row["doc"]["passage_id"] = f"story-{n // 3}"
        rows.append(row)
    samples = folder / f"samples_gsm8k_{STAMP}.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lmeval_results(folder, {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.5}},
                   {"gsm8k": {"original": 6, "effective": 6}})
    db = tmp_path / "s.duckdb"
    assert ingest_main([str(folder), "--db", str(db), "--cluster", "gsm8k=passage_id"]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.sql("SELECT instance_id, cluster FROM instances ORDER BY instance_id").fetchall() == [
            (str(n), f"story-{n // 3}") for n in range(6)]
    del rows[4]["doc"]["passage_id"]
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    other = tmp_path / "t.duckdb"
    assert ingest_main([str(folder), "--db", str(other), "--cluster", "gsm8k=passage_id"]) == 2
    assert not other.exists() or duckdb.connect(str(other), read_only=True).sql(
        "SELECT count(*) FROM runs").fetchall() == [(0,)]
    assert ingest_main([str(folder), "--db", str(other), "--cluster", "gsm8k"]) == 2


def test_an_inspect_metadata_field_names_the_cluster(tmp_path):
    """`--cluster toy=meta.passage`: a dotted path into each sample's metadata; every epoch of a
    sample keeps the one instance and its cluster."""
    import zipfile

    import duckdb

    from ingest.cli import main as ingest_main

    log = tmp_path / "a.eval"
    _epochs_log(log, "m/a", np.array([[True, False], [False, False], [True, True]]))
    with zipfile.ZipFile(log) as z:
        members = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile(log, "w") as z:
        for name, data in members.items():
            if name.startswith("samples/"):
                sample = json.loads(data)
                sample["metadata"] = {"meta": {"passage": f"p{(sample['id'] - 1) // 2}"}}
                data = json.dumps(sample)
            z.writestr(name, data)
    db = tmp_path / "s.duckdb"
    assert ingest_main([str(log), "--db", str(db), "--cluster", "toy=meta.passage"]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.sql("SELECT instance_id, cluster FROM instances ORDER BY 1").fetchall() == [
            ("1", "p0"), ("2", "p0"), ("3", "p1")]
    assert ingest_main([str(log), "--db", str(tmp_path / "t.duckdb"), "--cluster", "toy=meta.story"]) == 2
