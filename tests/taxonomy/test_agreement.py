"""`taxonomy agreement`: κ, agreement and confusion against scikit-learn, the edge cases, the
review queue and shared wrong answers."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_score, recall_score

import store
from conftest import run_module
from seed_store import seed
from store import queries as sq
from store.agreement import shared_wrong_answers
from store.agreement import review_queue
from store.analysis import refresh_labels
from taxonomy.agreement import AgreementError, agreement, cohen_kappa, measure, Pair

CATS = ["Calculation Error", "Factual Error", "Hallucination", "Refusal"]
# analyst label, human label for 30 failures of two models: a realistic mix of agreement
ANALYST = (["Calculation Error"] * 8 + ["Factual Error"] * 9 + ["Hallucination"] * 7 + ["Refusal"] * 6)
HUMAN = (["Calculation Error"] * 6 + ["Factual Error"] * 2 + ["Factual Error"] * 6 + ["Hallucination"] * 3
         + ["Hallucination"] * 5 + ["Factual Error"] * 2 + ["Refusal"] * 5 + ["Calculation Error"])


def _store(tmp_db, analyst=ANALYST, human=HUMAN, action_for=None):
    rows = [{"model": ("m1", "m2")[i % 2], "dataset": "d", "instance_id": f"q{i:02d}", "is_correct": False,
             "title": f"title {i}", "category": c} for i, c in enumerate(analyst)]
    seed(tmp_db, rows)
    with store.write_session(tmp_db) as con:
        for i, (a, h) in enumerate(zip(analyst, human)):
            if h is None:
                continue
            action = action_for(i) if action_for else ("confirm" if a == h else "relabel")
            sq.record_review(con, f"r1:{('m1', 'm2')[i % 2]}:d:None", f"q{i:02d}", "offline", action, a, h, None, "ann")


def test_agreement_matches_scikit_learn(tmp_db):
    _store(tmp_db)
    report = agreement(tmp_db, "offline")
    assert report.n == 30
    assert report.agreement == pytest.approx(sum(a == h for a, h in zip(ANALYST, HUMAN)) / 30)
    assert report.kappa == pytest.approx(cohen_kappa_score(HUMAN, ANALYST))
    assert report.labels == CATS
    assert report.matrix == confusion_matrix(HUMAN, ANALYST, labels=CATS).tolist()
    prec = precision_score(HUMAN, ANALYST, labels=CATS, average=None)
    rec = recall_score(HUMAN, ANALYST, labels=CATS, average=None)
    for cat, p, r in zip(CATS, prec, rec):
        assert report.per_category[cat]["precision"] == pytest.approx(p)
        assert report.per_category[cat]["recall"] == pytest.approx(r)
    low, high = report.kappa_ci
    assert low < report.kappa < high and 0 < high - low < 0.6
    assert len(report.disagreements) == sum(a != h for a, h in zip(ANALYST, HUMAN))
    m2 = [i for i in range(30) if i % 2]  # the questions model m2 answered
    assert agreement(tmp_db, "offline", models=["m2"]).kappa == pytest.approx(
        cohen_kappa_score([HUMAN[i] for i in m2], [ANALYST[i] for i in m2]))


def test_cli_json_has_exactly_the_documented_keys(tmp_db):
    _store(tmp_db)
    proc = run_module("taxonomy", "agreement", "--db", tmp_db, "--analyst", "offline", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"n", "agreement", "kappa", "kappa_ci", "per_category", "confusion", "specific",
                        "specific_right", "specific_precision", "abstained", "abstention_rate", "steps"}
    # every label of this analyst is specific; precision among them is the raw agreement
    assert (out["specific"], out["abstained"], out["abstention_rate"]) == (30, 0, 0.0)
    assert out["specific_precision"] == pytest.approx(out["agreement"])
    # plain answers have no first error steps: the steps part counts none
    assert out["steps"]["n"] == 0 and out["steps"]["coverage"] is None
    assert out["n"] == 30 and out["kappa"] == pytest.approx(cohen_kappa_score(HUMAN, ANALYST))
    assert out["confusion"]["matrix"] == confusion_matrix(HUMAN, ANALYST, labels=CATS).tolist()
    assert {"dataset": "d", "instance_id": "q06", "model": "m1", "analyst": "Calculation Error",
            "reference": "Factual Error"} in out["confusion"]["disagreements"]
    assert proc.stderr.strip().startswith("agreement of offline with human reviews on 30 failures: ")
    text = run_module("taxonomy", "agreement", "--db", tmp_db, timeout=120)
    assert text.returncode == 0 and "d:q06\tm1\tCalculation Error → Factual Error" in text.stdout


def test_precision_of_specific_labels_beside_abstention(tmp_db):
    """Hard to Analyze and Other are abstentions; every other label — No Model Error included —
    is a specific claim whose precision is reported."""
    analyst = ["Hard to Analyze"] * 4 + ["Other"] * 2 + ["No Model Error"] * 3 + ["Calculation Error"] * 5
    human = ["Reasoning Error"] * 4 + ["Other", "Refusal"] + ["No Model Error", "No Model Error", "Refusal"] \
        + ["Calculation Error"] * 3 + ["Factual Error"] * 2
    report = measure([Pair("d", str(i), "m", a, h) for i, (a, h) in enumerate(zip(analyst, human))], "offline", "gold")
    assert report.specific == {"specific": 8, "specific_right": 5, "specific_precision": 5 / 8, "abstained": 6,
                               "abstention_rate": 6 / 14}
    assert "specific labels 5/8 right (62.5%), 6 abstained (42.9%)" in report.line()
    _store(tmp_db, human=[None] * 30)
    assert agreement(tmp_db, "offline").as_json()["specific_precision"] is None


def test_no_reviews_is_an_empty_report_not_an_error(tmp_db):
    _store(tmp_db, human=[None] * 30)
    report = agreement(tmp_db, "offline")
    assert (report.n, report.agreement, report.kappa, report.kappa_ci) == (0, None, None, None)
    assert report.as_json()["confusion"] == {"labels": [], "matrix": [], "disagreements": []}
    proc = run_module("taxonomy", "agreement", "--db", tmp_db, "--json", timeout=120)
    assert proc.returncode == 0 and json.loads(proc.stdout)["kappa"] is None


def test_one_category_leaves_kappa_undefined_with_a_reason():
    pairs = [Pair("d", f"q{i}", "m", "Refusal", "Refusal") for i in range(5)]
    report = measure(pairs, "offline", "reviews")
    assert (report.n, report.agreement, report.kappa, report.kappa_ci) == (5, 1.0, None, None)
    assert "single category" in report.kappa_note
    assert report.matrix == [[5]]


def test_full_agreement_is_kappa_one():
    labels = ["Refusal", "Hallucination"] * 4
    report = measure([Pair("d", str(i), "m", c, c) for i, c in enumerate(labels)], "a", "b")
    assert report.kappa == pytest.approx(cohen_kappa_score(labels, labels)) == pytest.approx(1.0)
    assert report.kappa_ci == [1.0, 1.0]
    assert cohen_kappa([], []) == (None, "no labelled pairs")


def test_flags_are_not_labels(tmp_db):
    _store(tmp_db, action_for=lambda i: "flag" if i < 10 else ("confirm" if ANALYST[i] == HUMAN[i] else "relabel"))
    assert agreement(tmp_db, "offline").n == 20


def test_gold_file_and_another_analyst(tmp_db, tmp_path):
    _store(tmp_db)
    gold = tmp_path / "gold.csv"
    gold.write_text("dataset,instance_id,model,category\n" + "".join(
        f"d,q{i:02d},{('m1', 'm2')[i % 2]},{h.lower()}\n" for i, h in enumerate(HUMAN)), encoding="utf-8")
    report = agreement(tmp_db, "offline", gold=str(gold))
    assert report.n == 30 and report.kappa == pytest.approx(cohen_kappa_score(HUMAN, ANALYST))
    # a second analyst on the same failures, labelling as the humans did
    with store.write_session(tmp_db) as con:
        for i, h in enumerate(HUMAN):
            con.execute(
                "INSERT INTO analyses (run_id, instance_id, train_trial_index, analyst, prompt_version,"
                " pair_hash, error_title, error_summary, required_criteria, created_at)"
                " VALUES (?, ?, 0, 'openai/gpt-4o-mini', 'stage1-v1', 'h', ?, 's', '[]', ?)",
                [f"r1:{('m1', 'm2')[i % 2]}:d:None", f"q{i:02d}", f"llm title {i}", datetime(2026, 1, 2)])
            con.execute(
                "INSERT INTO classifications (error_title, taxonomy_version, classifier, category, is_fallback,"
                " created_at) VALUES (?, 'test-v1', 'openai/gpt-4o-mini', ?, false, ?)",
                [f"llm title {i}", h, datetime(2026, 1, 2)])
        refresh_labels(con)
    other = agreement(tmp_db, "offline", against="openai/gpt-4o-mini")
    assert other.n == 30 and other.against == "openai/gpt-4o-mini"
    assert other.kappa == pytest.approx(cohen_kappa_score(HUMAN, ANALYST))
    # the shared model filter narrows both sides: m1 answered every other question
    assert agreement(tmp_db, "offline", against="openai/gpt-4o-mini", models=["m1"]).n == 15
    bad = tmp_path / "bad.csv"
    bad.write_text("dataset,instance_id,category\nd,q1,Refusal\n", encoding="utf-8")
    with pytest.raises(AgreementError, match="bad.csv: the gold file lacks the column"):
        agreement(tmp_db, "offline", gold=str(bad))
    proc = run_module("taxonomy", "agreement", "--db", tmp_db, "--gold", bad, timeout=120)
    assert proc.returncode == 2 and "lacks the column(s) model" in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_analyst_is_a_clear_error(tmp_db):
    _store(tmp_db)
    proc = run_module("taxonomy", "agreement", "--db", tmp_db, "--analyst", "nobody", timeout=120)
    assert proc.returncode == 2 and "unknown analyst 'nobody'; analysts with results: offline" in proc.stderr


def test_review_queue_is_stratified_by_category_and_model(tmp_db):
    _store(tmp_db, human=[None] * 30)
    with store.read_connection(tmp_db) as con:
        queue = review_queue(con, "offline", per_stratum=2)
    per = queue.group_by("category", "model").len()
    assert per.height == 8 and per["len"].to_list() == [2] * 8
    with store.write_session(tmp_db) as con:
        sq.record_review(con, "r1:m1:d:None", queue["instance_id"][0], "offline", "confirm",
                         queue["category"][0], queue["category"][0], None, "ann")
    with store.read_connection(tmp_db) as con:
        again = review_queue(con, "offline", per_stratum=2)
    assert queue["instance_id"][0] not in again["instance_id"].to_list()


def test_shared_wrong_answers_group_models_that_chose_the_same_distractor(tmp_db):
    rows = [{"model": m, "dataset": "mmlu", "instance_id": "q1", "is_correct": False, "output": out}
            for m, out in (("a", "B"), ("b", "B"), ("c", "C"))]
    rows.append({"model": "d", "dataset": "mmlu", "instance_id": "q1", "is_correct": True, "output": "A"})
    seed(tmp_db, rows)
    with store.write_session(tmp_db) as con:
        con.execute("UPDATE instances SET choices = ?", [json.dumps({"A": "w", "B": "x", "C": "y"})])
    with store.read_connection(tmp_db) as con:
        shared = shared_wrong_answers(con)
    assert shared.rows() == [("mmlu", "q1", "B", 2, "a, b")]


def _run_page(page: str, **params):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page(page)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_taxonomy_page_shows_the_agreement_report_with_links(tmp_db, monkeypatch):
    _store(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = _run_page("pages/taxonomy.py", analyst="offline")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Failures labelled by both"] == "30"
    assert metrics["Cohen's κ"] == f"{cohen_kappa_score(HUMAN, ANALYST):.2f}"
    disagreements = at.dataframe[-1].value
    assert len(disagreements) == sum(a != h for a, h in zip(ANALYST, HUMAN))
    assert disagreements["open"].iloc[0] == "instances?analyst=offline&instance=d%3Aq06"


def test_instances_page_proposes_a_review_queue(tmp_db, monkeypatch):
    _store(tmp_db, human=[None] * 30)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = _run_page("pages/instances.py", analyst="offline")
    queue = at.dataframe[1].value
    assert len(queue) == 16 and set(queue.columns) >= {"category", "model", "open"}
