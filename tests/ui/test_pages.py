"""AppTest for every page: on the demo store a first start shows, on small synthetic stores the
tests write, and on real fixture data (mmlu-v1, skipped without ../shared).

Expected numbers come from the HELM files themselves (per_instance_stats exact_match), or from
the generator's planted failures and scipy, not from the store, so a wrong query cannot agree
with itself.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import pytest
from scipy.stats import binomtest
from streamlit.testing.v1 import AppTest

from tests.conftest import MMLU_SUITE, connect, requires_fixtures, run_module
from tests.seed_store import label_failures, seed
from page_kit import charts, run_page
from stats.fmt import p_value, pct
from ui.text import md

ROOT = Path(__file__).resolve().parents[2]
CATEGORIES = ["Reasoning Error", "Factual Error", "Question Misinterpretation", "Hard to Analyze"]
A, B = "groq/llama3-8b-8192", "together/Llama-3-70b-chat-hf"


def helm_exact_match(split: str | None = None) -> dict[tuple[str, str, str], bool]:
    """(model, subject, raw instance id) -> passed, read from the HELM suite (only questions of
    `split` when given)."""
    out = {}
    for run in sorted(MMLU_SUITE.iterdir()):
        if not (run / "run_spec.json").exists():
            continue
        spec = json.loads((run / "run_spec.json").read_text())
        model, subject = spec["adapter_spec"]["model"], spec["scenario_spec"]["args"]["subject"]
        for entry in json.loads((run / "per_instance_stats.json").read_text()):
            for s in entry["stats"]:
                name = s["name"]
                if name["name"] == "exact_match" and name.get("split") is not None \
                        and split in (None, name["split"]):
                    out[(model, subject, entry["instance_id"])] = s["sum"] == 1
    return out


def main_em(db) -> dict[tuple[str, str, str], bool]:
    """HELM's verdicts on the questions pages count by default: the main split the ingest
    recorded for the suite's runs (every split when it recorded none)."""
    with connect(db) as con:
        (split,), = con.execute("SELECT DISTINCT main_split FROM runs WHERE dataset = 'mmlu'").fetchall()
    return helm_exact_match(split)


def per_model(em: dict, passed: bool | None = None) -> Counter:
    return Counter(m for (m, _, _), ok in em.items() if passed is None or ok == passed)


@pytest.fixture
def labelled_mmlu(mmlu_db, monkeypatch):
    label_failures(mmlu_db, CATEGORIES)
    monkeypatch.setenv("FAULTLINE_DB", str(mmlu_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return mmlu_db


def frame_with(at, *cols: str):
    """The first dataframe on the page holding all these columns."""
    return next(d.value for d in at.dataframe if set(cols) <= set(d.value.columns))


@requires_fixtures
def test_helm_reference_counts():
    em = helm_exact_match()
    assert len(em) == 1000
    passed = Counter(m for (m, _, _), ok in em.items() if ok)
    assert passed == {"groq/llama3-70b-8192": 110, "groq/llama3-8b-8192": 61,
                      "huggingface/Meta-Llama-3-8B": 95, "together/Llama-3-70b-chat-hf": 113,
                      "together/Llama-3-8b-chat-hf": 89}


def test_overview_accuracy_matches_helm(labelled_mmlu):
    at = run_page()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Runs"] == "50" and metrics["Models"] == "5" and metrics["Domains"] == "10"
    acc = at.dataframe[0].value
    em = main_em(labelled_mmlu)
    passed, answered = per_model(em, True), per_model(em)
    assert dict(zip(acc["model"], acc["n"])) == answered
    # the harness's number: HELM's own MMLU headline, the mean of the subjects' exact_match; the
    # rate pooled over questions beside it, as text rounded by stats/fmt.py
    subjects: dict = {}
    for (m, subject, _), ok in em.items():
        subjects.setdefault((m, subject), []).append(ok)
    helm = {m: sum(sum(v) / len(v) for (mm, _), v in subjects.items() if mm == m) / 10 for m in answered}
    assert dict(zip(acc["model"], acc["harness"])) == {m: pct(v) for m, v in helm.items()}
    assert dict(zip(acc["model"], acc["accuracy"])) == {m: pct(passed[m] / answered[m]) for m in answered}
    assert all(ci.endswith(" (t by domain)") for ci in acc["harness_ci"])
    assert list(acc["model"]) == sorted(helm, key=helm.get, reverse=True)  # best first
    # a 0/1 metric: one number, no failures under a threshold beside it
    assert "threshold_failures" not in acc.columns
    assert len(charts(at)) == 1
    failed = sum(per_model(em, False).values())
    # each count named as the glossary names it (core/counts.py), with its rule on hover
    line = next(m for m in at.markdown if "analysed failures of" in m.value)
    assert line.value == (f"**{failed}** analysed failures of {failed} failures under the analysis threshold, "
                          f"by **offline**; {failed} labelled failures.")
    assert line.help.startswith("Failures under the analysis threshold: the latest outcome of each question")


def test_overview_filters_from_url(labelled_mmlu):
    at = run_page(domains=["anatomy"], models=[A])
    acc = at.dataframe[0].value
    anatomy = [ok for (m, s, _), ok in main_em(labelled_mmlu).items() if m == A and s == "anatomy"]
    assert acc["model"].tolist() == [A] and acc["harness"].tolist() == [pct(sum(anatomy) / len(anatomy))]
    assert acc["n"].tolist() == [len(anatomy)]
    # the headline counts follow the filters too
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Runs"], metrics["Models"], metrics["Loaded predictions"]) == ("1", "1", "20")
    link = at.code[0].value
    assert link.startswith("/?") and "models=groq%2Fllama3-8b-8192" in link and "domains=anatomy" in link


def test_empty_state(tmp_path, monkeypatch):
    import store

    db = tmp_path / "empty.duckdb"
    with store.write_session(db):
        pass
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    for page in (None, "pages/compare.py", "pages/instances.py", "pages/data.py"):
        at = run_page(page)
        assert "The database holds no runs yet" in at.info[0].value
        assert "python -m ingest PATH" in at.info[0].value
        assert "python -m taxonomy analyze --analyst offline" in at.info[0].value
        assert [b.label for b in at.button] == ["Load"]


def test_compare_page_matches_helm_and_url(labelled_mmlu):
    at = run_page("pages/compare.py", a=A, b=B)
    em = main_em(labelled_mmlu)
    keys = {(s, i) for (_, s, i) in em}
    a_only = sum(1 for s, i in keys if not em[(A, s, i)] and em[(B, s, i)])
    b_only = sum(1 for s, i in keys if em[(A, s, i)] and not em[(B, s, i)])
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Questions both answered"] == str(len(keys))
    assert metrics["Only A fails"] == str(a_only)
    assert metrics["Only B fails"] == str(b_only)
    assert metrics["p (two-sided)"] == p_value(binomtest(a_only, a_only + b_only, 0.5).pvalue)
    assert md(f"{A} fails significantly more often than {B}") in at.markdown[0].value
    table = frame_with(at, "finding", "q_text")
    # Hard to Analyze is not an error type: listed apart, never tested
    assert sorted(table["category"]) == sorted(c for c in CATEGORIES if c != "Hard to Analyze")
    apart = next(d.value for d in at.dataframe
                 if list(d.value.columns) == ["category", "a_count", "b_count", "a_share", "b_share"])
    assert list(apart["category"]) == ["Hard to Analyze"]
    # every failure is labelled: error types plus the labels apart add up to HELM's failures
    fails = per_model(em, False)
    assert int(table["a_count"].sum()) + int(apart["a_count"].sum()) == fails[A]
    assert int(table["b_count"].sum()) + int(apart["b_count"].sum()) == fails[B]
    assert len(charts(at)) == 1
    only_a, only_b = (frame_with(at, "a_output", "reference"), at.dataframe[-1].value)
    # each tab pages through its own side, 50 at a time
    assert a_only > 50 and (len(only_a), len(only_b)) == (50, min(b_only, 50))
    assert {"input_text", "reference", "a_output", "b_output"} <= set(only_a.columns)
    # both logs are HELM's, so every pair shares its id and B's own id is not repeated
    assert "b_instance_id" not in only_a.columns
    at.number_input(key="page_a").set_value(2).run()
    assert len(at.dataframe[-2].value) == min(a_only - 50, 50) and len(at.dataframe[-1].value) == min(b_only, 50)
    with connect(labelled_mmlu) as con:
        outputs = dict(con.execute("SELECT o.instance_id, o.output_text || ' · ' || (i.choices ->> trim(o.output_text)) "
                                   "FROM outcomes o JOIN instances i USING (run_id, instance_id) WHERE model = ?",
                                   [A]).fetchall())
    # a multiple-choice answer reads as its letter and the option's text, beside the gold
    assert all(outputs[i] == o for i, o in zip(only_a["instance_id"], only_a["a_output"]))
    assert all(" · " in r for r in only_a["reference"])


def test_compare_chart_marks_and_table_from_one_test(labelled_mmlu):
    """The Δ chart colours each error type by the table's finding; significant = BH q ≤ 0.05."""
    at = run_page("pages/compare.py", a=A, b=B)
    table = frame_with(at, "finding", "q_text")
    spec = json.loads(charts(at)[0].proto.spec)
    layers = spec["layer"]
    assert any(layer.get("encoding", {}).get("color", {}).get("field") == "finding" for layer in layers)
    legend = [layer["encoding"]["color"] for layer in layers if "color" in layer.get("encoding", {})][0]
    assert legend["title"].startswith("Finding") and set(legend["scale"]["domain"]) == set(table["finding"])
    import stats
    import store

    with store.read_connection(labelled_mmlu) as con:
        c = stats.compare(con, A, B)
    for row in table.to_dict("records"):
        r = next(x for x in c.categories if x.category == row["category"])
        assert row["q_text"] == p_value(r.q_bh) and row["finding"] == r.finding
        assert (r.q_bh <= 0.05) == row["finding"].startswith("larger in")


def test_compare_page_domain_filter(labelled_mmlu):
    at = run_page("pages/compare.py", a=B, b=A, domains=["anatomy", "virology"])
    both = {(s, i) for (_, s, i) in main_em(labelled_mmlu) if s in ("anatomy", "virology")}
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == str(len(both))
    assert at.selectbox(key="a").value == B and at.selectbox(key="b").value == A
    # naming two models in the shared filter narrows the choice of A and B to them
    at = run_page("pages/compare.py", models=[B, A])
    assert at.selectbox(key="a").options == [B, A]
    assert {at.selectbox(key="a").value, at.selectbox(key="b").value} == {A, B}


def test_signatures_page(labelled_mmlu):
    from stats.fmt import interval

    at = run_page("pages/signatures.py")
    sig = frame_with(at, "per_100", "failures")
    apart = next(d.value for d in at.dataframe if "share_ci" in d.value.columns and "per_100" not in d.value.columns)
    em = main_em(labelled_mmlu)
    # error types in the signature, Hard to Analyze apart; together every failure HELM counts
    assert "Hard to Analyze" not in set(sig["category"]) and set(apart["category"]) == {"Hard to Analyze"}
    failures = (sig.groupby("model")["count"].sum() + apart.groupby("model")["count"].sum()).to_dict()
    fails = per_model(em, False)
    assert failures == fails
    # a share is of EVERY failure of the model (issue 32: Hard to Analyze in the denominator too),
    # as stats/fmt.py prints it; with no review it is the analyst's count, its interval Wilson's
    for table in (sig, apart):
        assert (table["failures"] == table["model"].map(fails)).all()
        assert list(table["share"]) == [pct(v) for v in table["count"] / table["model"].map(fails)]
        cis = [binomtest(int(k), fails[m]).proportion_ci(method="wilson") for m, k in zip(table["model"], table["count"])]
        assert list(table["share_ci"]) == [interval(ci.low, ci.high, fails[m]) for ci, m in zip(cis, table["model"])]
    assert (sig["per_100"] == 100 * sig["count"] / sig["model"].map(per_model(em))).all()
    assert len(charts(at)) == 2
    assert any("offline analyst" in c.value for c in at.caption)
    assert any(c.value.startswith(":material/fact_check: Analyst accuracy not measured") for c in at.caption)
    # the cell picker links to the filtered instances page
    at.selectbox(key="cell_model").select(A)
    at.selectbox(key="cell_category").select("Factual Error")
    at.run()
    links = [l.proto for l in at.get("page_link") if "Factual Error" in l.proto.label]
    assert len(links) == 1 and links[0].label == f"Open {md(A)}'s Factual Error failures →"
    assert links[0].query_string == (
        "models=groq%2Fllama3-8b-8192&category=Factual+Error&outcome=failed&analyst=offline")
    reviews = frame_with(at, "reviewed")
    assert reviews["reviewed"].sum() == 0


def test_signatures_measure_from_url(labelled_mmlu):
    at = run_page("pages/signatures.py", measure="count", models=[A])
    assert at.get("button_group")[0].value == "count"
    assert set(frame_with(at, "per_100")["model"]) == {A}


def test_slices_page(labelled_mmlu):
    at = run_page("pages/slices.py", models=[A])
    frames = [d.value for d in at.dataframe]
    by_dataset = [f for f in frames if {"dataset", "category"} <= set(f.columns)]
    by_domain = [f for f in frames if "domain" in f.columns]
    em = main_em(labelled_mmlu)
    # above them, what these are failures of: the model's own result on the dataset
    result = next(f for f in frames if "harness" in f.columns)
    assert result["dataset"].tolist() == ["mmlu"] and result["n"].tolist() == [per_model(em)[A]]
    # error types in the chart's table, the labels that are not error types in their own table
    assert [set(f["category"]) == {"Hard to Analyze"} for f in by_dataset] == [False, True]
    assert set(by_dataset[0]["dataset"]) == {"mmlu"}
    assert sum(f["count"].sum() for f in by_dataset) == per_model(em, False)[A]
    fails = Counter(s for (m, s, _), ok in em.items() if m == A and not ok)
    assert (by_domain[0].groupby("domain")["count"].sum().add(
        by_domain[1].groupby("domain")["count"].sum(), fill_value=0).to_dict()) == dict(fails)
    assert len(charts(at)) == 2


def test_data_page(labelled_mmlu):
    at = run_page("pages/data.py")
    runs = at.dataframe[0].value
    assert len(runs) == 50 and runs["n_predictions"].sum() == 1000
    assert set(runs["source_format"]) == {"helm"}
    # its counts are named as the glossary names them (core/counts.py), the rules on hover
    failed = int(runs["n_failures"].sum())
    line = at.markdown[0]
    assert line.value == f"50 runs, 1,000 loaded predictions, {failed:,} failures as loaded, 0 infrastructure errors."
    assert "Failures as loaded: predictions judged failed at load" in line.help


def test_taxonomy_page(labelled_mmlu):
    with connect(labelled_mmlu, read_only=False) as con:
        con.execute("INSERT INTO taxonomies VALUES ('test-v1', 'Test taxonomy', 'test', ?, now())",
                    [json.dumps([{"name": c, "description": f"about {c}"} for c in CATEGORIES])])
    at = run_page("pages/taxonomy.py", category="Factual Error")
    described = at.dataframe[0].value
    assert list(described["description"]) == [f"about {c}" for c in CATEGORIES]
    per_category = at.dataframe[1].value
    assert per_category.drop(columns="category").to_numpy().sum() == sum(per_model(main_em(labelled_mmlu), False).values())
    titles = at.dataframe[2].value
    assert all(t.startswith("Factual Error title") for t in titles["error_title"])
    assert [l.proto.label for l in at.get("page_link")].count("Open the Factual Error failures →") == 1


def _synthetic_with_evidence(db):
    seed(db, [
        dict(model="M1", dataset="ds", domain="d", instance_id="q1", is_correct=False,
             input="What is 2+3?", output="First 2+3 = 6, so the answer is 6.",
             title="adds wrong", category="Calculation Error",
             criteria=[{"criterion": "adds", "present_in_wrong": True, "quality": "incorrect",
                        "evidence": "2+3 = 6", "comment": "wrong sum"},
                       {"criterion": "states", "present_in_wrong": True, "quality": "correct",
                        "evidence": "a quote the model never wrote", "comment": ""}]),
        dict(model="M2", dataset="ds", domain="d", instance_id="q1", is_correct=True,
             input="What is 2+3?", output="5"),
    ])


def test_instances_detail_evidence_and_review(tmp_db, monkeypatch):
    _synthetic_with_evidence(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page("pages/instances.py", instance="ds:q1")
    assert at.header[0].value == "ds · q1"
    html = [m.value for m in at.markdown if "pre-wrap" in m.value]
    assert html[0].count("<mark>") == 1 and "<mark>2&#43;3 &#61; 6</mark>" in html[0]
    found = [c.value for c in at.caption if c.value.startswith("evidence")]
    assert found == ["evidence (verified: it occurs verbatim in the output)",
                     "evidence (UNVERIFIED: not in the output verbatim; the analyst paraphrased)"]
    assert [c.value for c in at.code if "2+3" in c.value or "never wrote" in c.value] == [
        "2+3 = 6", "a quote the model never wrote"]
    assert any("adds wrong" in m.value and "Calculation Error" in m.value for m in at.markdown)

    at.radio[0].set_value("flag")
    name = [t for t in at.text_input if t.label == "Your name"][0]
    name.input("Ada")
    at.button[0].click()
    at.run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Review saved."]  # the save confirms itself
    with connect(tmp_db) as con:
        assert con.execute("SELECT action, reviewer, original_category FROM reviews").fetchall() == [
            ("flag", "Ada", "Calculation Error")]
    sig = run_page("pages/signatures.py")
    reviews = sig.dataframe[1].value
    assert reviews.set_index("model").loc["M1", ["reviewed", "agreed"]].tolist() == [1, 0]


def test_a_question_without_input_says_so(tmp_path, monkeypatch):
    """A table of your own may have no input column: the page says the log holds none (st.json
    of nothing drew an error box)."""
    log = tmp_path / "no_input.jsonl"
    log.write_text(json.dumps({"model": "m", "dataset": "ds", "instance_id": "q1", "reference": "a", "output": "b",
                               "correct": False}) + "\n")
    db = tmp_path / "store.duckdb"
    assert run_module("ingest", log, "--db", db).returncode == 0
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page("pages/instances.py", instance="ds:q1")
    assert "The log holds no input for this question." in [c.value for c in at.caption]
    assert not at.get("json")


def test_instances_read_only_hides_review(tmp_db, monkeypatch):
    _synthetic_with_evidence(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    at = run_page("pages/instances.py", instance="ds:q1")
    assert not at.radio and not at.button


def test_instances_list_says_what_has_no_label(tmp_db, monkeypatch):
    seed(tmp_db, [dict(model="m/a", dataset="ds", instance_id="q1", is_correct=False, title="Says 4", category="Factual Error"),
                  dict(model="m/a", dataset="ds", instance_id="q2", is_correct=False),
                  dict(model="m/a", dataset="ds", instance_id="q3", is_correct=True)])
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    failed = run_page("pages/instances.py").dataframe[0].value.sort_values("instance_id")
    assert failed[["instance_id", "category", "error_title"]].values.tolist() == [
        ["q1", "Factual Error", "Says 4"], ["q2", "not analysed", "–"]]
    passed = run_page("pages/instances.py", outcome="passed").dataframe[0].value
    assert passed[["instance_id", "category", "error_title"]].values.tolist() == [["q3", "–", "–"]]


def test_instances_filters(labelled_mmlu):
    at = run_page("pages/instances.py", models=[A], outcome="failed", category="Factual Error")
    rows = at.dataframe[0].value
    assert set(rows["model"]) == {A} and set(rows["category"]) == {"Factual Error"}
    assert set(rows["passed"]) == {"no"}
    # with no outcome in the link the page opens on the failures, saying how many there are
    at = run_page("pages/instances.py", text="anatomy/id138")
    em = main_em(labelled_mmlu)
    failed = sum(1 for (_, s, i), ok in em.items() if f"{s}/{i}" == "anatomy/id138" and not ok)
    assert set(at.dataframe[0].value["instance_id"]) == {"anatomy/id138"}
    assert len(at.dataframe[0].value) == failed and set(at.dataframe[0].value["passed"]) == {"no"}
    assert any(c.value.startswith(f"{failed} failed outcome") for c in at.caption)
    at = run_page("pages/instances.py", models=[A])
    total = per_model(em, False)[A]
    assert total > 0 and any(c.value.startswith(f"{total:,} failed outcomes") for c in at.caption)


@pytest.fixture
def offline_mmlu(mmlu_db, monkeypatch):
    """mmlu-v1 analysed by the real pipeline (`python -m taxonomy analyze --analyst offline`)."""
    proc = run_module("taxonomy", "analyze", "--db", mmlu_db, "--analyst", "offline")
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("FAULTLINE_DB", str(mmlu_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return mmlu_db


def test_every_page_on_offline_analysis(offline_mmlu):
    from taxonomy.catalog import load_taxonomy

    with connect(offline_mmlu) as con:
        failed_id = con.execute("SELECT dataset || ':' || instance_id FROM failures "
                                "ORDER BY instance_id LIMIT 1").fetchall()[0][0]
    for page, params in [(None, {}), ("pages/signatures.py", {}), ("pages/compare.py", {"a": A, "b": B}),
                         ("pages/slices.py", {}), ("pages/instances.py", {"instance": failed_id}),
                         ("pages/taxonomy.py", {}), ("pages/data.py", {})]:
        at = run_page(page, **params)
        assert not at.error, (page, [e.value for e in at.error])
    described = run_page("pages/taxonomy.py").dataframe[0].value
    assert list(described["name"]) == load_taxonomy().names
    at = run_page("pages/signatures.py")
    labelled = frame_with(at, "per_100")["count"].sum() + frame_with(at, "labelled")["count"].sum()
    assert labelled == sum(per_model(main_em(offline_mmlu), False).values())


def test_menu_links_carry_shared_filters(labelled_mmlu):
    at = run_page("pages/slices.py", models=[A], domains=["anatomy"])
    menu = {"Overview", "Signatures", "Compare", "Slices", "Instances", "Taxonomy", "Data"}
    links = {l.proto.label: l.proto for l in at.get("page_link")}
    assert menu <= set(links)
    for label in menu:
        assert links[label].query_string == "models=groq%2Fllama3-8b-8192&domains=anatomy"
    # in the page: the way to measure the analyst (no review yet), with the same filters
    measure = [link for label, link in links.items() if label not in menu]
    assert [link.label for link in measure] == ["Measure the analyst: draw failures to review on the Taxonomy page →"]
    assert measure[0].query_string == "models=groq%2Fllama3-8b-8192&domains=anatomy&analyst=offline"
    data = run_page("pages/data.py", domains=["anatomy"]).dataframe[0].value
    assert len(data) == 5 and set(data["domain"]) == {"anatomy"}


def test_filter_change_writes_the_url(labelled_mmlu):
    at = run_page("pages/slices.py", domains=["anatomy"], models=["not-a-model", A])
    assert at.query_params == {"domains": "anatomy", "models": A}  # unknown values dropped
    at.multiselect(key="domains").select("virology")
    at.run()
    assert at.query_params["domains"] == ["anatomy", "virology"]
    assert frame_with(at, "domain")["domain"].tolist().count("virology") > 0
    at.multiselect(key="domains").unselect("anatomy").unselect("virology")
    at.run()
    assert "domains" not in at.query_params


def test_read_only_from_secrets(tmp_db, monkeypatch):
    _synthetic_with_evidence(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/instances.py")
    at.secrets["read_only"] = True
    at.query_params["instance"] = "ds:q1"
    at.run()
    assert not at.exception and not at.radio and not at.button
    assert any("adds wrong" in m.value for m in at.markdown)


def test_reads_while_a_writer_holds_the_store_then_shows_new_data(labelled_mmlu):
    import subprocess
    import sys

    assert len(run_page().dataframe[0].value) == 5
    virology = Counter(m for (m, s, _) in main_em(labelled_mmlu) if s == "virology")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, store\n"
         "with store.write_session(sys.argv[1]):\n"
         "    print('locked', flush=True)\n"
         "    time.sleep(2)\n", str(labelled_mmlu)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        # a view not cached yet: its read-only connection waits for the writer, then reads
        start = time.monotonic()
        acc = run_page(domains=["virology"]).dataframe[0].value
        assert time.monotonic() - start > 0.5 and dict(zip(acc["model"], acc["n"])) == virology
    finally:
        holder.wait(timeout=30)
    seed(labelled_mmlu, [dict(model="new/model", dataset="mmlu", domain="anatomy",
                              instance_id="anatomy/id138", is_correct=True)])
    acc = run_page().dataframe[0].value  # the data version changed: no stale cache
    assert len(acc) == 6 and acc.set_index("model").loc["new/model", "harness"] == "100.0%"


def test_pages_on_safety_runs_without_domains(safety_db, monkeypatch):
    """Two datasets, no domains, continuous safety scores: every page renders; pairs span datasets."""
    proc = run_module("taxonomy", "analyze", "--db", safety_db, "--analyst", "offline")
    assert proc.returncode == 0, proc.stderr
    monkeypatch.setenv("FAULTLINE_DB", str(safety_db))
    for page in ("pages/signatures.py", "pages/slices.py", "pages/instances.py",
                 "pages/taxonomy.py", "pages/data.py"):
        assert not run_page(page).error
    at = run_page("pages/compare.py", a="meta/llama-3-8b-chat", b="openai/gpt-4o-2024-05-13")
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == "200"
    slices = frame_with(run_page("pages/slices.py"), "domain")
    assert set(slices["domain"]) == {"(none)"}


def test_links_to_instance_details(labelled_mmlu):
    at = run_page("pages/compare.py", a=A, b=B)
    only_a = frame_with(at, "open", "a_output")
    first = only_a.iloc[0]
    assert first["open"] == ("instances?instance=mmlu%3A" + first["instance_id"].replace("/", "%2F")
                             + "&models=groq%2Fllama3-8b-8192&models=together%2FLlama-3-70b-chat-hf"
                             + "&analyst=offline")
    tax = next(d.value for d in run_page("pages/taxonomy.py", category="Factual Error").dataframe
               if "error_title" in d.value.columns)
    title = tax["error_title"].iloc[0]
    rows = run_page("pages/instances.py", category="Factual Error", outcome="failed",
                    text=title).dataframe[0].value
    assert len(rows) > 0 and set(rows["error_title"]) == {title}


def test_compare_says_when_too_small(tmp_db, monkeypatch):
    rows = []
    for i in range(4):
        rows.append(dict(model="X", dataset="ds", instance_id=f"q{i}", is_correct=i > 0,
                         **({"title": "t1", "category": "Refusal"} if i == 0 else {})))
        rows.append(dict(model="Y", dataset="ds", instance_id=f"q{i}", is_correct=i > 2,
                         **({"title": "t2", "category": "Refusal"} if i <= 2 else {})))
    seed(tmp_db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py", a="X", b="Y")
    # plain words and right plurals: "passes 0 times ... twice", "only 2 questions where they differ"
    assert at.markdown[0].value == md(
        "On 4 questions both answered, X fails where Y passes 0 times, and Y fails where X passes "
        "twice: only 2 questions where they differ, too few to tell the models apart "
        "(McNemar exact p = 0.5).", 2000)
    table = frame_with(at, "finding")
    assert list(table["finding"]) == ["too few to tell"] and list(table["category"]) == ["Refusal"]
    paired = frame_with(at, "p_paired_text")
    assert (paired["a_only_fail"].tolist(), paired["b_only_fail"].tolist()) == ([0], [2])


def test_compare_names_bs_own_id_when_questions_paired_by_text(tmp_db, monkeypatch):
    # A and B asked the same four questions under ids of their own (two harnesses)
    rows = [dict(model="A", dataset="ds", instance_id=f"helm-{i}", question_hash=f"h{i}",
                 is_correct=i % 2 == 1) for i in range(4)]
    rows += [dict(model="B", dataset="ds", instance_id=f"inspect-{3 - i}", question_hash=f"h{i}",
                  is_correct=i < 3) for i in range(4)]
    seed(tmp_db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py", a="A", b="B")
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == "4"
    only_a, only_b = at.dataframe[-2].value, at.dataframe[-1].value
    assert list(zip(only_a["instance_id"], only_a["b_instance_id"])) == [
        ("helm-0", "inspect-3"), ("helm-2", "inspect-1")]
    assert list(zip(only_b["instance_id"], only_b["b_instance_id"])) == [("helm-3", "inspect-0")]


def test_review_relabel_then_confirm(tmp_db, monkeypatch):
    _synthetic_with_evidence(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page("pages/instances.py", instance="ds:q1")
    name = [t for t in at.text_input if t.label == "Your name"][0]
    at.radio[0].set_value("relabel")
    name.input("Ada")
    at.button[0].click()
    at.run()
    assert at.warning[0].value == "Pick the new category to relabel."
    at.radio[0].set_value("relabel")
    [t for t in at.text_input if t.label == "Your name"][0].input("Ada")
    relabel = [s for s in at.selectbox if s.label == "New category (relabel)"][0]
    relabel.select("Calculation Error")
    at.button[0].click()
    at.run()
    assert any("Reviewed: relabel → Calculation Error by Ada" in c.value for c in at.caption)
    with connect(tmp_db) as con:
        assert con.execute("SELECT action, category FROM reviews").fetchall() == [
            ("relabel", "Calculation Error")]
    at.radio[0].set_value("confirm")
    [t for t in at.text_input if t.label == "Your name"][0].input("Bo")
    at.button[0].click()
    at.run()
    reviews = run_page("pages/signatures.py").dataframe[1].value
    assert reviews.set_index("model").loc["M1", ["reviewed", "agreed"]].tolist() == [1, 1]


def _splits_and_variants(db):
    """M: main split test (6 test rows, 4 pass; 4 valid rows, all pass); org/m at 0-shot (8 of
    20 pass) and 5-shot (14 of 20 pass) on gsm8k."""
    seed(db, [dict(model="M", dataset="ds", instance_id=f"t{i}", split="test", main_split="test",
                   is_correct=i < 4) for i in range(6)]
         + [dict(model="M", dataset="ds", instance_id=f"v{i}", split="valid", main_split="test",
                 is_correct=True) for i in range(4)])
    for shots, passing in ((0, 8), (5, 14)):
        seed(db, [dict(model="org/m", dataset="gsm8k", instance_id=f"q{i}", is_correct=i < passing,
                       settings={"harness": "lm-eval", "n_shot": shots}) for i in range(20)])


def test_split_filter_from_url_and_menu(tmp_db, monkeypatch):
    _splits_and_variants(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page(models=["M"])
    assert at.selectbox(key="split").value == "main"
    assert at.selectbox(key="split").options == ["main split of each run", "test", "valid", "all splits"]
    acc = at.dataframe[0].value
    assert (acc["n"].tolist(), acc["harness"].tolist()) == ([6], [pct(4 / 6)])
    at = run_page(models=["M"], split="valid")
    assert (at.dataframe[0].value["n"].tolist(), at.dataframe[0].value["harness"].tolist()) == ([4], ["100.0%"])
    links = {l.proto.label: l.proto.query_string for l in at.get("page_link")}
    assert links["Compare"] == "models=M&split=valid"
    assert "split=valid" in at.code[0].value
    at.selectbox(key="split").set_value("all").run()
    assert at.query_params["split"] == "all" and at.dataframe[0].value["n"].tolist() == [10]
    at.selectbox(key="split").set_value("main").run()
    assert "split" not in at.query_params
    at = run_page(split="no-such-split")
    assert at.selectbox(key="split").value == "main" and "split" not in at.query_params


def test_variants_are_models_on_every_page(tmp_db, monkeypatch):
    _splits_and_variants(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    zero, five = "org/m · 0-shot", "org/m · 5-shot"
    at = run_page(datasets=["gsm8k"])
    assert at.multiselect(key="models").options == ["M", zero, five]
    acc = at.dataframe[0].value
    assert dict(zip(acc["model"], acc["harness"])) == {zero: pct(8 / 20), five: pct(14 / 20)}
    at = run_page("pages/compare.py", a=zero, b=five)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Questions both answered"] == "20"
    assert metrics["Only A fails"] == "6" and metrics["Only B fails"] == "0"
    runs = run_page("pages/data.py", datasets=["gsm8k"]).dataframe[0].value
    assert sorted(zip(runs["model"], runs["variant"])) == [(zero, "0-shot"), (five, "5-shot")]
    assert set(runs["main_split"]) == {"—"} and all("/" not in f for f in runs["file"])


# ---------------------------------------------------------------- the first start: the demo

PAGES = [None, "pages/signatures.py", "pages/compare.py", "pages/slices.py", "pages/instances.py",
         "pages/taxonomy.py", "pages/data.py"]
HOSTILE = ("line one\n\n# injected heading\n<img src=http://127.0.0.1:9/x> "
           "[link](http://example.invalid) ![pic](http://127.0.0.1:9/y) :red[red] $x^2$")


@pytest.fixture
def no_store(tmp_path, monkeypatch):
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_path / "not-yet.duckdb"))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return tmp_path / "not-yet.duckdb"


def test_first_start_shows_the_demo_under_a_banner(no_store):
    at = run_page()
    assert "DEMO DATA" in at.warning[0].value
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Runs"], metrics["Models"], metrics["Datasets"], metrics["Loaded predictions"],
            metrics["Failures as loaded"]) == ("44", "4", "4", "488", "144")
    assert len(charts(at)) == 4  # accuracy: one full-width chart per dataset
    assert [b.label for b in at.button if b.label == "Start with an empty store"]
    assert not no_store.exists()  # the demo lives in its own file, the user's store is untouched
    for page in PAGES[1:]:
        at = run_page(page)
        assert not at.error, (page, [e.value for e in at.error])
        assert "DEMO DATA" in at.warning[0].value, page
    assert len(charts(run_page("pages/signatures.py"))) == 2


def test_demo_compare_matches_the_planted_difference(no_store):
    at = run_page("pages/compare.py", a="demo/atlas-7b", b="demo/atlas-70b")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Questions both answered"] == "122"
    assert metrics["Only A fails"] == "38"
    assert metrics["Only B fails"] == "15"
    assert metrics["p (two-sided)"] == "0.0022"
    table = frame_with(at, "finding").set_index("category")
    assert table.loc["Calculation Error", ["a_count", "b_count"]].tolist() == [14, 0]
    # the planted difference: atlas-7b's calculation errors (shares of failures with an error type)
    assert float(table.loc["Calculation Error", "p_fisher_text"]) < 0.05
    assert table.loc["Calculation Error", "finding"] == "larger in A"
    assert set(table["finding"]) <= {"larger in A", "larger in B", "not significant", "too few to tell"}
    assert (len(at.dataframe[-2].value), len(at.dataframe[-1].value)) == (38, 15)
    only_a = at.dataframe[-2].value
    math = only_a[only_a["dataset"] == "demo_math"]
    assert len(math) > 0 and math["reference"].str.fullmatch(r"\d+").all()  # the gold answer beside the outputs


def test_start_with_an_empty_store_leaves_the_demo(no_store):
    at = run_page()
    next(b for b in at.button if b.label == "Start with an empty store").click()
    at.run()
    assert not at.exception and no_store.exists()
    assert "The database holds no runs yet" in at.info[0].value
    assert not any("DEMO DATA" in w.value for w in at.warning)


def test_bad_url_parameters_say_so(no_store):
    at = run_page("pages/signatures.py", models=["no/such-model", "demo/atlas-7b"], analyst="nobody")
    warnings = " ".join(w.value for w in at.warning)
    assert md("no/such-model") in warnings and "which this store does not have" in warnings
    assert "analyst “nobody”" in warnings
    assert set(at.dataframe[0].value["model"]) == {"demo/atlas-7b"}
    at = run_page("pages/compare.py", a="ghost", b="demo/atlas-7b")
    assert any("model A “ghost”" in w.value for w in at.warning)
    # page-specific choices too: a category no failure is filed under, a model not loaded
    for page, params, named in (("pages/taxonomy.py", {"category": "No Such Category"}, "category"),
                                ("pages/instances.py", {"category": "No Such Category"}, "category"),
                                ("pages/slices.py", {"model": "no/such-model"}, "model")):
        at = run_page(page, **params)
        asked = next(iter(params.values()))
        assert [w.value for w in at.warning if "The link names" in w.value] == [
            f"The link names {named} “{md(asked)}”, which is not among those here; pick one below."], page
    # a category the demo's failures are filed under draws no warning, and is picked
    at = run_page("pages/taxonomy.py", category="Constraint Violation")
    assert not [w for w in at.warning if "The link names" in w.value]
    assert at.selectbox(key="category").value == "Constraint Violation"


def test_paging_through_one_side_of_a_comparison(tmp_db, monkeypatch):
    rows = []
    for i in range(130):
        rows.append(dict(model="X", dataset="ds", instance_id=f"q{i:03d}", is_correct=i >= 120))
        rows.append(dict(model="Y", dataset="ds", instance_id=f"q{i:03d}", is_correct=i < 120 or i >= 127))
    seed(tmp_db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py", a="X", b="Y")
    assert [t.label for t in at.tabs] == ["Only A fails (120)", "Only B fails (7)"]

    def sides(at):
        return [d.value for d in at.dataframe if "a_output" in d.value.columns]

    assert [len(f) for f in sides(at)] == [50, 7]
    at.number_input(key="page_a").set_value(3).run()
    page3, other = sides(at)
    assert list(page3["instance_id"]) == [f"q{i:03d}" for i in range(100, 120)]
    assert len(other) == 7  # the other tab keeps its own page (one page: no pager)
    assert [n.key for n in at.number_input] == ["page_a"]


# ---------------------------------------------------------------- read-only and hostile text


def _hostile_store(db):
    seed(db, [
        dict(model="evil [m](http://example.invalid)", dataset="ds", domain="d", instance_id="q1",
             is_correct=False, input=HOSTILE, output=HOSTILE, title="title " + HOSTILE,
             category="Refusal",
             criteria=[{"criterion": HOSTILE, "present_in_wrong": True, "quality": "incorrect",
                        "evidence": "# injected heading", "comment": HOSTILE}]),
        dict(model="plain", dataset="ds", domain="d", instance_id="q1", is_correct=True,
             input=HOSTILE, output="fine"),
    ])


def _markdown_is_inert(at) -> None:
    for block in [m.value for m in at.markdown] + [c.value for c in at.caption] + \
                 [h.value for h in at.header] + [w.value for w in at.warning]:
        # escaped forms (\\<img, &#60;img) are inert; a bare tag or link is not
        assert not re.search(r"(?<!\\)<img", block) and "](http" not in block and "\n#" not in block, block
        assert "![" not in block and ":red[red]" not in block


def test_hostile_text_is_never_markup(tmp_db, monkeypatch):
    _hostile_store(tmp_db)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page("pages/instances.py", instance="ds:q1")
    _markdown_is_inert(at)
    assert HOSTILE in [t.value for t in at.text]  # the input, shown as text, whole
    html = next(m.value for m in at.markdown if "pre-wrap" in m.value)
    assert "\n" not in html and "&#60;img" in html and "<mark>&#35; injected heading</mark>" in html
    at = run_page("pages/compare.py", a="plain", b="evil [m](http://example.invalid)")
    _markdown_is_inert(at)
    # a hostile `instance` parameter in a link, read-only, is text too
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    at = run_page("pages/instances.py", instance="ds:<img src=http://127.0.0.1:9/z>\n\n# h")
    _markdown_is_inert(at)


def test_very_long_output_is_cut_for_display(tmp_db, monkeypatch):
    seed(tmp_db, [dict(model="M", dataset="ds", instance_id="q1", is_correct=False,
                       output="word " * 30_000, title="t", category="Verbosity")])
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/instances.py", instance="ds:q1")
    html = next(m.value for m in at.markdown if "pre-wrap" in m.value)
    assert len(html) < 25_000
    assert any("[… 130,000 more characters not shown" in c.value for c in at.caption)


@pytest.mark.parametrize("store_kind", ["demo", "seeded"])
def test_read_only_offers_no_control_that_writes_on_any_page(store_kind, tmp_db, monkeypatch):
    if store_kind == "seeded":
        _synthetic_with_evidence(tmp_db)
        monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    else:
        monkeypatch.setenv("FAULTLINE_DB", str(tmp_db.with_name("none.duckdb")))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    params = {"pages/instances.py": {"instance": "ds:q1" if store_kind == "seeded" else "demo_math:arithmetic/id1"}}
    for page in PAGES:
        at = run_page(page, **params.get(page, {}))
        assert not at.error, (page, [e.value for e in at.error])
        labels = [b.label for b in at.button]
        assert labels == [], (page, labels)  # no load, analyse, review or "empty store" button
        # only the search box may take text: no path to load, no review note or name
        assert [t.label for t in at.text_input] in ([], ["Search input, output, id or error title"]), page
        assert not at.radio and not at.get("file_uploader"), page
        assert not at.get("form"), page
        shown = " ".join(str(x.value) for x in [*at.markdown, *at.caption, *at.info, *at.warning, *at.code])
        assert str(ROOT) not in shown and str(tmp_db.parent) not in shown, page
    runs = run_page("pages/data.py").dataframe[0].value
    assert all("/" not in p for p in runs["file"])  # file names, not server paths


def test_compare_hides_categories_when_no_question_is_shared(tmp_db, monkeypatch):
    seed(tmp_db, [dict(model="X", dataset="one", instance_id="q1", is_correct=False, title="t", category="Refusal"),
                  dict(model="Y", dataset="two", instance_id="q1", is_correct=False, title="t", category="Refusal")])
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py", a="X", b="Y")
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == "0"
    assert "answered no question in common" in at.info[0].value
    assert not at.dataframe and not charts(at) and not at.tabs
    assert "Failure categories" not in [s.value for s in at.subheader]


def test_overview_offers_the_report_download(no_store):
    at = run_page()
    buttons = [b.proto for b in at.get("download_button")]
    assert [b.label for b in buttons if "static report" in b.label] == ["Download a static report (HTML)"]
    # every chart has its SVG and PNG download (4 datasets, 4 accuracy charts)
    assert sorted(b.label for b in buttons if b.label in ("SVG", "PNG")) == ["PNG"] * 4 + ["SVG"] * 4


def test_compare_opens_on_the_pair_sharing_the_most_questions(tmp_db, monkeypatch):
    """'a-first' and 'b-second' come first by name but share no question; the page opens on the
    pair that shares the most, and on A's best partner when the link names only A."""
    rows = [dict(model="a-first", dataset="one", instance_id=f"q{i}", is_correct=i % 2 == 0) for i in range(3)]
    rows += [dict(model="b-second", dataset="two", instance_id=f"q{i}", is_correct=i % 3 == 0) for i in range(6)]
    rows += [dict(model=m, dataset="two", instance_id=f"q{i}", is_correct=(i + k) % 4 == 0)
             for k, m in enumerate(["c-third", "d-fourth"]) for i in range(5)]
    rows += [dict(model="d-fourth", dataset="one", instance_id=f"q{i}", is_correct=True) for i in range(3)]
    seed(tmp_db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py")
    # shared: b/c 5, b/d 5, c/d 5, a/d 3 -> ties by name: b-second and c-third
    assert (at.selectbox(key="a").value, at.selectbox(key="b").value) == ("b-second", "c-third")
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == "5"
    at = run_page("pages/compare.py", a="a-first")
    assert at.selectbox(key="b").value == "d-fourth"
    assert {m.label: m.value for m in at.metric}["Questions both answered"] == "3"
    # no analysis at all: the message says so; a store with analyses of others says that instead
    assert any("No failures analysed yet" in i.value for i in at.info)


def test_compare_never_says_nothing_is_analysed_when_others_are(tmp_db, monkeypatch):
    rows = [dict(model=m, dataset="ds", instance_id=f"q{i}", is_correct=i % 2 == 0) for m in ("A", "B") for i in range(4)]
    rows += [dict(model="C", dataset="other", instance_id="q0", is_correct=False, title="t", category="Refusal")]
    seed(tmp_db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/compare.py", a="A", b="B")
    infos = " ".join(i.value for i in at.info)
    assert "No failures analysed yet" not in infos
    assert "the store holds 1 analysed failures outside that" in infos.replace("\\", "") or \
        "holds 1 analysed" in infos.replace("\\", "")


def test_instance_view_shows_the_verdict_rule_judges_and_chosen_option(tmp_db, monkeypatch):
    from judged_question import JUDGE_WORDS, evidence_rows

    seed(tmp_db, evidence_rows())
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = run_page("pages/instances.py", instance="geo:q1")
    captions = [c.value for c in at.caption]
    rule = md("pass = correct (exact_match is 0/1, from the registry)", 400)
    assert sorted(c for c in captions if c.startswith(md("exact_match"))) == [
        f"{md('exact_match')} = 0 · {rule}", f"{md('exact_match')} = 1 · {rule}"]
    marks = [m.value for m in at.markdown]
    assert f"chose **{md('B · Lyon')}**  \ngold **{md('A · Paris')}**" in marks
    assert any(JUDGE_WORDS == t.value for t in at.text)
    assert any(c == f"{md('gpt-4o')} · {md('accuracy')} · score 1" for c in captions)
    assert any("Answer with the letter of the correct option." == t.value for t in at.text)
    refs = frame_with(at, "option", "reference", "correct")
    assert refs.to_dict("records") == [{"option": "A", "reference": "Paris", "correct": "yes"},
                                       {"option": "B", "reference": "Lyon", "correct": "no"}]


def test_unequal_question_sets_are_one_note_not_a_box_per_dataset(tmp_path, monkeypatch):
    """Three datasets where the models answered different numbers of questions: one note names all
    three (eight yellow boxes, mostly one model's shot variants, shouted over the page)."""
    from seed_store import seed

    db = tmp_path / "s.duckdb"
    rows = [{"model": m, "dataset": d, "instance_id": f"q{i}", "is_correct": i % 2 == 0}
            for d, sizes in (("d1", (4, 6)), ("d2", (3, 5)), ("d3", (2, 7)), ("d4", (5, 5)))
            for m, n in zip(("m/a", "m/b"), sizes) for i in range(n)]
    seed(db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    at = run_page()
    notes = [i.value for i in at.info if "different numbers of questions" in i.value]
    # (the Markdown source: a dataset's name is data, its colon escaped)
    assert notes == ["Models answered different numbers of questions on 3 datasets: d1\\: 4 vs 6 questions; "
                     "d2\\: 3 vs 5 questions; d3\\: 2 vs 7 questions. Their numbers are over different question "
                     "sets; the Compare page pairs the questions both answered."]
    assert not [w for w in at.warning if "different numbers of questions" in w.value]


def test_compare_opens_on_two_models_not_two_settings_of_one():
    import polars as pl

    from ui.pairs import best_partner, default_pair

    shared = pl.DataFrame({"a": ["phi · 0-shot", "llama", "llama", "tiny"],
                           "b": ["phi · 5-shot", "phi · 0-shot", "phi · 5-shot", "phi · 0-shot"],
                           "shared": [1000, 900, 880, 100]})
    models = ["llama", "phi · 0-shot", "phi · 5-shot", "tiny"]
    assert default_pair(shared, models) == ("llama", "phi · 0-shot")
    assert best_partner(shared, "phi · 0-shot", models) == "llama"
    # another model sharing under half as many: the two settings it is
    assert best_partner(shared.filter(pl.col("a") != "llama"), "phi · 0-shot", models) == "phi · 5-shot"
