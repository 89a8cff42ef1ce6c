"""stats: the tests, `compare` and the CLI against scipy, on synthetic and real (mmlu-v1) stores."""

from __future__ import annotations

import json
import math

import duckdb
import pytest
from scipy import stats as sst

import stats
import store
from core import significance as t
from stats.cli import main
from tests.conftest import q, run_module
from tests.seed_store import label_failures, seed


def test_wilson_matches_scipy():
    ci = sst.binomtest(7, 20).proportion_ci(method="wilson")
    assert t.wilson(7, 20) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert all(math.isnan(x) for x in t.wilson(0, 0))


def test_mcnemar_and_small_n():
    assert t.mcnemar_exact(0, 0) == 1.0
    assert t.mcnemar_exact(9, 1) == pytest.approx(sst.binomtest(9, 10, 0.5).pvalue)
    # 5 discordant pairs can never reach p <= 0.05 (2 * 0.5**5 = 0.0625); 6 can (0.03125)
    assert not t.mcnemar_can_decide(5) and t.mcnemar_can_decide(6)
    assert t.mcnemar_exact(6, 0) < 0.05 and t.mcnemar_exact(5, 0) > 0.05


def test_fisher_can_decide_uses_attainable_p():
    assert not t.fisher_can_decide(1, 3, 0, 3)
    assert t.fisher_can_decide(10, 10, 0, 10)


def test_share_difference_interval_contains_delta():
    d, lo, hi = t.share_difference_ci(30, 50, 10, 50)
    assert d == pytest.approx(0.4) and lo < 0.4 < hi and lo > 0


def _synthetic(db):
    """40 questions: A fails 0-19, B fails 10-34; categories chosen so they differ."""
    rows = []
    for i in range(40):
        qid = f"q{i:02d}"
        a_fail, b_fail = i < 20, 10 <= i < 35
        rows.append(dict(model="A", dataset="ds", domain="d1" if i % 2 else "d2", instance_id=qid,
                         is_correct=not a_fail, **({"title": f"a{i % 3}", "category": "Calc" if i % 3 else "Fact"} if a_fail else {})))
        rows.append(dict(model="B", dataset="ds", domain="d1" if i % 2 else "d2", instance_id=qid,
                         is_correct=not b_fail, **({"title": f"b{i % 4}", "category": "Refusal" if i % 4 == 0 else "Calc"} if b_fail else {})))
    seed(db, rows)


def _expected(db, a, b, analyst="offline"):
    """The DESIGN definitions computed straight from the public views with scipy."""
    con = duckdb.connect(str(db), read_only=True)
    pairs = con.execute(
        """
        WITH o AS (SELECT * FROM outcomes WHERE is_correct IS NOT NULL AND is_main_split
                   QUALIFY row_number() OVER (PARTITION BY model, dataset, instance_id ORDER BY ingested_at DESC) = 1),
             f AS (SELECT * FROM failures WHERE analyst = ? AND category IS NOT NULL)
        SELECT oa.is_correct, ob.is_correct, fa.category, fb.category
        FROM o oa JOIN o ob USING (dataset, instance_id)
        LEFT JOIN f fa ON fa.run_id = oa.run_id AND fa.instance_id = oa.instance_id
        LEFT JOIN f fb ON fb.run_id = ob.run_id AND fb.instance_id = ob.instance_id
        WHERE oa.model = ? AND ob.model = ?
        """, [analyst, a, b]).fetchall()
    fails = con.execute(
        "SELECT f.model, f.category, count(*) FROM failures f"
        " JOIN outcomes o USING (run_id, instance_id, train_trial_index)"
        " WHERE o.is_main_split AND f.analyst = ? AND f.category IS NOT NULL"
        " AND f.model IN (?, ?) GROUP BY ALL", [analyst, a, b]).fetchall()
    con.close()
    n10 = sum(1 for ac, bc, _, _ in pairs if not ac and bc)
    n01 = sum(1 for ac, bc, _, _ in pairs if ac and not bc)
    labels = {(m, c): n for m, c, n in fails}
    a_labelled = sum(n for (m, _), n in labels.items() if m == a)
    b_labelled = sum(n for (m, _), n in labels.items() if m == b)
    # only error types are tested; Other, Hard to Analyze and No Model Error are counted apart
    not_errors = ("Other", "Hard to Analyze", "No Model Error")
    counts = {k: n for k, n in labels.items() if k[1] not in not_errors}
    at = sum(n for (m, _), n in counts.items() if m == a)
    bt = sum(n for (m, _), n in counts.items() if m == b)
    cats = sorted({c for _, c in counts})
    apart = {c: dict(a_count=labels.get((a, c), 0), b_count=labels.get((b, c), 0),
                     a_share=labels.get((a, c), 0) / a_labelled, b_share=labels.get((b, c), 0) / b_labelled)
             for c in not_errors if (a, c) in labels or (b, c) in labels}
    rows = {}
    for c in cats:
        ac, bc = counts.get((a, c), 0), counts.get((b, c), 0)
        pa = sum(1 for x, y, ca, _ in pairs if not x and y and ca == c)
        pb = sum(1 for x, y, _, cb in pairs if x and not y and cb == c)
        rows[c] = dict(a_count=ac, b_count=bc, a_share=ac / at, b_share=bc / bt,
                       p_fisher=sst.fisher_exact([[ac, at - ac], [bc, bt - bc]]).pvalue,
                       p_paired=sst.binomtest(pa, pa + pb, 0.5).pvalue if pa + pb else 1.0)
    for c, qv in zip(cats, sst.false_discovery_control([rows[c]["p_fisher"] for c in cats])):
        rows[c]["q_bh"] = qv
    p = sst.binomtest(n10, n10 + n01, 0.5).pvalue if n10 + n01 else 1.0
    return dict(a_only_fail=n10, b_only_fail=n01, p=p, n_pairs=len(pairs), categories=rows,
                a_total=at, b_total=bt, a_labelled=a_labelled, b_labelled=b_labelled, apart=apart)


def _assert_matches(result: dict, exp: dict):
    assert result["mcnemar"]["a_only_fail"] == exp["a_only_fail"]
    assert result["mcnemar"]["b_only_fail"] == exp["b_only_fail"]
    assert result["mcnemar"]["p"] == pytest.approx(exp["p"], rel=1e-12)
    got = {c["category"]: c for c in result["categories"]}
    assert set(got) == set(exp["categories"])
    for cat, e in exp["categories"].items():
        for key, v in e.items():
            assert got[cat][key] == pytest.approx(v, rel=1e-12), (cat, key)
    assert (result["a_total"], result["b_total"]) == (exp["a_total"], exp["b_total"])
    assert (result["a_labelled"], result["b_labelled"]) == (exp["a_labelled"], exp["b_labelled"])
    apart = {c["category"]: c for c in result["not_error_types"]}
    assert set(apart) == set(exp["apart"])
    for cat, e in exp["apart"].items():
        for key, v in e.items():
            assert apart[cat][key] == pytest.approx(v, rel=1e-12), (cat, key)


def test_compare_synthetic_matches_scipy(tmp_db):
    _synthetic(tmp_db)
    with store.read_connection(tmp_db) as con:
        result = stats.compare(con, "A", "B")
    exp = _expected(tmp_db, "A", "B")
    assert (exp["a_only_fail"], exp["b_only_fail"]) == (10, 15)  # the seed's design
    _assert_matches(result.to_json(), exp)
    assert result.analyst == "offline" and result.weaker == "B"
    # the ErrorMap check: B (weaker) count under A's share, one-sided
    calc = next(c for c in result.categories if c.category == "Calc")
    assert calc.p_errormap == pytest.approx(
        sst.binomtest(calc.b_count, result.b_total, calc.a_share, alternative="greater").pvalue)


def test_reingest_replaces_and_another_log_is_a_rerun(tmp_db):
    _synthetic(tmp_db)
    everything_passes = [dict(model="A", dataset="ds", domain="d1" if i % 2 else "d2",
                              instance_id=f"q{i:02d}", is_correct=True) for i in range(40)]
    # the same log again (same run ids) replaces A's runs: A now only passes
    seed(tmp_db, everything_passes)
    with store.read_connection(tmp_db) as con:
        r = stats.compare(con, "A", "B")
        assert (r.n_pairs, r.a_only_fail, r.b_only_fail, r.a_total) == (40, 0, 25, 0)
    # another log of A with the same settings in another folder is a rerun of A, not a model of
    # its own nor a replacement: the latest counts, the earlier one stays in the store
    _synthetic(tmp_db)
    seed(tmp_db, everything_passes, run_tag="r2")
    with store.read_connection(tmp_db) as con:
        assert store.queries.filter_options(con)["models"] == ["A", "B"]
        latest = stats.compare(con, "A", "B")
    assert (latest.n_pairs, latest.a_only_fail, latest.b_only_fail) == (40, 0, 25)
    assert q(tmp_db, "SELECT count(*), count(superseded_by) FROM runs WHERE model = 'A'") == [(4, 2)]
    # neither log says when it ran: ingested again, the first one is the latest and counts again
    _synthetic(tmp_db)
    with store.read_connection(tmp_db) as con:
        again = stats.compare(con, "A", "B")
    assert (again.n_pairs, again.a_only_fail, again.b_only_fail) == (40, 10, 15)


def test_filters_and_analyst_choice(tmp_db):
    _synthetic(tmp_db)
    with store.read_connection(tmp_db) as con:
        r = stats.compare(con, "A", "B", domains=["d1"])
        assert r.n_pairs == 20
        with pytest.raises(store.FaultlineError, match="unknown analyst 'gpt'.*offline"):
            stats.compare(con, "A", "B", analyst="gpt")


def test_cli_json_and_summary(tmp_db, capsys):
    _synthetic(tmp_db)
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--json"]) == 0
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert set(data["mcnemar"]) == {"a_only_fail", "b_only_fail", "p", "mde", "test", "clusters", "clustered"}
    assert data["mcnemar"]["test"] == "McNemar exact" and data["mcnemar"]["clusters"] is None
    assert set(data["categories"][0]) == {"category", "a_count", "b_count", "a_share", "b_share",
                                          "p_fisher", "q_bh", "p_paired", "p_errormap", "corrected_delta",
                                          "corrected_low", "corrected_high", "finding", "paired_mde", "clusters"}
    # each type's paired McNemar carries what it could detect, on the pairs both answered
    from core.power import mcnemar_mde

    with store.read_connection(tmp_db) as con:
        c = stats.compare(con, "A", "B")
    expected = {r.category: (mcnemar_mde(c.n_pairs, (r.a_only_fail + r.b_only_fail) / c.n_pairs)
                             if r.a_only_fail + r.b_only_fail else None) for r in c.categories}
    assert {r["category"]: r["paired_mde"] for r in data["categories"]} == expected
    assert any(v is not None for v in expected.values())
    assert {r["clusters"] for r in data["categories"]} == {None}
    # no people's label measured the analyst: nothing is corrected, and the JSON says so
    assert {c["corrected_delta"] for c in data["categories"]} == {None}
    assert data["shares_method"] == "sampling error only: analyst accuracy not measured"
    _assert_matches(data, _expected(tmp_db, "A", "B"))
    assert err.strip().splitlines()[-1].startswith("compared A vs B: 40 pairs")


def test_cli_readable_table(tmp_db, capsys):
    _synthetic(tmp_db)
    assert main(["compare", "A", "B", "--db", str(tmp_db)]) == 0
    out = capsys.readouterr().out
    assert "McNemar exact p" in out or "too few" in out
    assert "p_errormap" in out and "ErrorMap paper" in out
    assert out.strip().splitlines()[-1].startswith("compared A vs B")


def test_cli_unknown_model_lists_known(tmp_db, capsys):
    _synthetic(tmp_db)
    assert main(["compare", "A", "Z", "--db", str(tmp_db)]) == 2
    assert "unknown model 'Z'; known models: A, B" in capsys.readouterr().err
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--domains", "d9"]) == 2
    assert "unknown domain 'd9'; known domains: d1, d2" in capsys.readouterr().err
    assert main(["compare", "A", "A", "--db", str(tmp_db)]) == 2
    assert "compare two different models" in capsys.readouterr().err


def test_cli_missing_db(tmp_path, capsys):
    assert main(["compare", "A", "B", "--db", str(tmp_path / "none.duckdb")]) == 2
    assert "no database here yet" in capsys.readouterr().err


def test_fail_on_regression(tmp_db, capsys):
    # B fails 12 questions A passes and none the other way: a significant overall regression
    rows = []
    for i in range(30):
        rows.append(dict(model="A", dataset="ds", instance_id=f"q{i}", is_correct=i >= 3,
                         **({"title": "x", "category": "Calc"} if i < 3 else {})))
        rows.append(dict(model="B", dataset="ds", instance_id=f"q{i}", is_correct=i >= 15,
                         **({"title": "y", "category": "Calc"} if i < 15 else {})))
    seed(tmp_db, rows)
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--fail-on-regression"]) == 1
    err = capsys.readouterr().err
    assert "regression: overall: B fails 12 questions A passes, vs 0" in err
    # the reverse direction is an improvement, not a regression
    assert main(["compare", "B", "A", "--db", str(tmp_db), "--fail-on-regression"]) == 0


def test_category_regression_gates(tmp_db, capsys):
    # same overall failures on disjoint halves, but B's failures are all Refusal, A's all Calc
    rows = []
    for i in range(40):
        rows.append(dict(model="A", dataset="ds", instance_id=f"q{i}", is_correct=i >= 20,
                         **({"title": "calc", "category": "Calc"} if i < 20 else {})))
        rows.append(dict(model="B", dataset="ds", instance_id=f"q{i}", is_correct=i < 20,
                         **({"title": "refuse", "category": "Refusal"} if i >= 20 else {})))
    seed(tmp_db, rows)
    assert main(["compare", "A", "B", "--db", str(tmp_db), "--fail-on-regression", "--json"]) == 1
    err = capsys.readouterr().err
    assert "regression: Refusal: 20/20" in err and "overall" not in err


def test_report_writes_html(tmp_db, tmp_path, capsys):
    _synthetic(tmp_db)
    out = tmp_path / "r.html"
    assert main(["report", "--db", str(tmp_db), "--out", str(out)]) == 0
    page = out.read_text()
    assert "<h2>Results</h2>" in page and "A (A) vs B (B)" in page and "<script" not in page
    assert capsys.readouterr().out.startswith(f"wrote {out}: 2 models, 1 comparisons")
    assert main(["report", "--db", str(tmp_db), "--models", "Q", "--out", str(out)]) == 2


def test_module_entry_point(tmp_db):
    _synthetic(tmp_db)
    proc = run_module("stats", "compare", "A", "B", "--db", tmp_db, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["a"] == "A"


MMLU_CATEGORIES = ["Reasoning Error", "Factual Error", "Question Misinterpretation", "Hard to Analyze"]


def _main_split(db):
    (split,), = store_rows(db, "SELECT DISTINCT main_split FROM runs")
    return split


def store_rows(db, sql):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_compare_mmlu_matches_scipy(mmlu_db, capsys):
    label_failures(mmlu_db, MMLU_CATEGORIES)
    a, b = "groq/llama3-8b-8192", "together/Llama-3-70b-chat-hf"
    assert main(["compare", a, b, "--db", str(mmlu_db), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    exp = _expected(mmlu_db, a, b)
    # HELM's exact_match: 61 and 113 of 200 pass over both splits, 55 and 96 of the 176 test questions
    n, a_pass, b_pass = {None: (200, 61, 113), "test": (176, 55, 96)}[_main_split(mmlu_db)]
    assert exp["n_pairs"] == n and exp["a_labelled"] == n - a_pass and exp["b_labelled"] == n - b_pass
    _assert_matches(data, exp)
    # MMLU_CATEGORIES holds Hard to Analyze: counted apart, never among the tested categories
    assert "Hard to Analyze" in {c["category"] for c in data["not_error_types"]}
    assert "Hard to Analyze" not in {c["category"] for c in data["categories"]}


def test_compare_mmlu_offline_analysis_matches_scipy(mmlu_db, capsys):
    proc = run_module("taxonomy", "analyze", "--db", mmlu_db, "--analyst", "offline")
    assert proc.returncode == 0, proc.stderr
    a, b = "together/Llama-3-8b-chat-hf", "huggingface/Meta-Llama-3-8B"
    assert main(["compare", a, b, "--db", str(mmlu_db), "--json", "--analyst", "offline"]) == 0
    data = json.loads(capsys.readouterr().out)
    exp = _expected(mmlu_db, a, b)
    n, a_pass, b_pass = {None: (200, 89, 95), "test": (176, 78, 83)}[_main_split(mmlu_db)]
    assert exp["a_labelled"] == n - a_pass and exp["b_labelled"] == n - b_pass
    _assert_matches(data, exp)


def test_report_on_mixed_datasets_compares_only_models_that_share_questions(mmlu_db, tmp_path, capsys):
    from conftest import SAFETY
    from ingest import ingest_paths

    ingest_paths([SAFETY], db=mmlu_db)
    out = tmp_path / "mixed.html"
    assert main(["report", "--db", str(mmlu_db), "--out", str(out)]) == 0
    page = out.read_text()
    # 5 MMLU models pair with each other (10), the 4 safety models too (6); the 20 cross pairs
    # share no question and are listed, not compared
    assert capsys.readouterr().out.startswith(f"wrote {out}: 9 models, 16 comparisons")
    assert page.count("<h3>") == 16
    assert "Not compared (no question answered by both)" in page
    assert "nan" not in page
    # accuracy is per dataset: a model on two datasets has two rows
    assert page.count("<td>meta/llama-3-8b-chat</td>") == 2


def test_labels_that_are_not_error_types_are_counted_apart_and_never_tested(tmp_db):
    """Hard to Analyze, Other and No Model Error: outside the shares' denominators, the tests and
    Benjamini–Hochberg (before the fix, Hard to Analyze 20 vs 2 was a 'finding' with q < 0.05)."""
    rows = []
    for i in range(60):
        a_cat = ("Hard to Analyze" if i < 20 else "Calc" if i < 23 else "Lang" if i < 24
                 else "Other" if i < 26 else None)
        b_cat = ("Hard to Analyze" if i < 2 else "Calc" if i < 14 else "Fact" if i < 20
                 else "No Model Error" if i < 23 else None)
        rows.append(dict(model="A", dataset="ds", instance_id=f"q{i}", is_correct=a_cat is None,
                         **({"title": f"a {a_cat}", "category": a_cat} if a_cat else {})))
        rows.append(dict(model="B", dataset="ds", instance_id=f"q{i}", is_correct=b_cat is None,
                         **({"title": f"b {b_cat}", "category": b_cat} if b_cat else {})))
    seed(tmp_db, rows)
    with store.read_connection(tmp_db) as con:
        r = stats.compare(con, "A", "B")
    assert [c.category for c in r.categories] == ["Fact", "Lang", "Calc"]  # by |Δ share|
    assert (r.a_total, r.b_total, r.a_labelled, r.b_labelled) == (4, 18, 26, 23)
    tables = {"Calc": [[3, 1], [12, 6]], "Fact": [[0, 4], [6, 12]], "Lang": [[1, 3], [0, 18]]}
    fisher = {c: sst.fisher_exact(tab).pvalue for c, tab in tables.items()}
    q = dict(zip(fisher, sst.false_discovery_control(list(fisher.values()))))
    for c in r.categories:
        assert (c.p_fisher, c.q_bh) == (pytest.approx(fisher[c.category]), pytest.approx(q[c.category]))
    apart = {c.category: (c.a_count, c.b_count) for c in r.not_error_types}
    assert apart == {"Other": (2, 0), "Hard to Analyze": (20, 2), "No Model Error": (0, 3)}
    assert {c.category: c.a_share for c in r.not_error_types}["Hard to Analyze"] == pytest.approx(20 / 26)
    # B has no Lang at all: the paper's check under the stronger model's share 0 is undefined,
    # not "p = 0" (a binomial with rate 0 makes any count impossible)
    by = {c.category: c for c in r.categories}
    assert r.weaker == "A" and by["Lang"].b_count == 0 and by["Lang"].p_errormap is None
    assert by["Calc"].p_errormap == pytest.approx(
        sst.binomtest(3, 4, 12 / 18, alternative="greater").pvalue)
    assert json.loads(json.dumps(r.to_json()))["not_error_types"][1] == {
        "category": "Hard to Analyze", "a_count": 20, "b_count": 2, "a_share": 20 / 26, "b_share": 2 / 23}
