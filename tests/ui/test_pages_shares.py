"""Issue 32 on the pages: error-type shares with their 95% interval, the analyst's calibration
beside its labels, and the taxonomy page's controls that draw failures to review, load people's
labels and calibrate. Stores are built in tmp_path through the project's own functions
(review_sample, load_labels, calibrate), never committed.

Expected numbers are computed here from first principles where the method allows it (with no
review a share is count / every failure, its interval Wilson's, from scipy); the corrected shares
come from stats.signature and are checked for what must hold of them (they add up to one over a
model's categories, people's labels counted where given)."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter

import pytest
from page_kit import charts, run_page
from scipy.stats import binomtest

from stats import fmt
from tests.conftest import connect
from tests.seed_store import seed
from ui.text import md

NOT_MEASURED = ("Analyst accuracy not measured: review 50 failures to measure it (Taxonomy page, or "
                "python -m taxonomy review-sample --analyst offline --n 50).")


def chart_rows(chart) -> list[dict]:
    """The rows a chart on the page was drawn from (Streamlit sends them apart, as Arrow)."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    rows = []
    for ds in chart.proto.datasets:
        frame = convert_arrow_bytes_to_pandas_df(ds.data.data)
        rows += [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                 for r in frame.to_dict("records")]
    return rows


def _copy(src, dst):
    shutil.copyfile(src, dst)
    if (wal := src.with_name(src.name + ".wal")).exists():
        shutil.copyfile(wal, dst.with_name(dst.name + ".wal"))
    return dst


def _failures(db) -> dict[str, Counter]:
    """model → Counter of the offline analyst's labels of its failures (all of the demo's are labelled)."""
    with connect(db) as con:
        rows = con.execute("SELECT model, category FROM latest_labels WHERE analyst = 'offline' "
                           "AND is_main_split AND category IS NOT NULL").fetchall()
        n = dict(con.execute("SELECT model, count(*) FROM latest_outcomes WHERE NOT is_correct GROUP BY model").fetchall())
    out: dict[str, Counter] = {}
    for model, category in rows:
        out.setdefault(model, Counter())[category] += 1
    assert {m: sum(c.values()) for m, c in out.items()} == n  # every failure carries a label
    return out


@pytest.fixture
def demo_store(demo_db, tmp_path, monkeypatch):
    db = _copy(demo_db, tmp_path / "demo.duckdb")
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    return db


def _reviewed(db, tmp_path, n=40) -> dict:
    """Draw `n` failures, label them (the analyst's label kept, except every fourth, which people
    call a Reasoning Error), load the table and calibrate: the project's own path."""
    from taxonomy.calibration import calibrate, review_sample
    from taxonomy.labels import load_labels
    from ui.review import sample_csv

    _, sample = review_sample(db, "offline", n, record=True)
    rows = list(csv.DictReader(sample_csv(sample).decode().splitlines()))
    for i, row in enumerate(rows):
        row["category"] = "Reasoning Error" if i % 4 == 0 else row["analyst_category"]
    filled = tmp_path / "filled.csv"
    with open(filled, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    load_labels([filled], db, "Ada")
    result = calibrate(db, "offline")
    return {"rows": rows, "calibration": result}


def test_signatures_without_reviews_say_not_measured_with_wilson_intervals(demo_store):
    at = run_page("pages/signatures.py")
    captions = [c.value for c in at.caption]
    assert ":material/fact_check: " + md(NOT_MEASURED, 2000) in captions
    assert any(c.startswith(":material/warning: Shares are the analyst's own labels, with Wilson 95% intervals "
                            "(sampling error only): analyst accuracy not measured.") for c in captions)
    assert any("offline analyst" in c for c in captions)  # the offline analyst's own caveat stays
    links = [link.proto for link in at.get("page_link") if "Taxonomy page" in link.proto.label]
    assert len(links) == 1 and links[0].page.endswith("taxonomy")
    failures = _failures(demo_store)
    tables = [d.value for d in at.dataframe if {"share", "share_ci", "failures"} <= set(d.value.columns)]
    assert len(tables) == 2  # the labels that are not error types, then the error types
    seen = Counter()
    for table in tables:
        for row in table.to_dict("records"):
            k, n = failures[row["model"]][row["category"]], sum(failures[row["model"]].values())
            ci = binomtest(k, n).proportion_ci(method="wilson")
            assert (row["count"], row["failures"], row["labelled"], row["people"]) == (k, n, n, 0)
            assert row["share"] == fmt.pct(k / n)
            assert row["share_ci"] == fmt.interval(ci.low, ci.high, n)
            assert row["few"] == "no"
            seen[row["model"]] += k
    # the error types and the labels apart share one denominator: every failure of the model
    assert seen == {m: sum(c.values()) for m, c in failures.items()}
    # the heatmap: each row says how many of the model's failures carry a label; a cell its share
    # and, under it, its interval in whole percents; the shade is the interval's lower end
    cells = chart_rows(charts(at)[0])
    atlas = next(r for r in cells if r["model"] == "demo/atlas-7b" and r["category"] == "Calculation Error")
    k, n = failures["demo/atlas-7b"]["Calculation Error"], sum(failures["demo/atlas-7b"].values())
    ci = binomtest(k, n).proportion_ci(method="wilson")
    assert atlas["model_label"] == f"demo/atlas-7b\nlabelled {n} of {n} failures"
    assert atlas["label"] == fmt.pct(k / n)
    assert atlas["interval_label"] == f"{round(ci.low * 100)}–{round(ci.high * 100)}%"
    assert atlas["shade"] == pytest.approx(ci.low)


def test_signatures_with_reviews_say_corrected_and_the_calibration(demo_store, tmp_path):
    import stats
    import store

    made = _reviewed(demo_store, tmp_path)
    cal = made["calibration"].report["all"]
    assert cal["n"] == 40
    at = run_page("pages/signatures.py")
    captions = [c.value for c in at.caption]
    caveat = (f"Analyst measured on 40 people's labels: κ {cal['kappa']:.2f}, "
              f"{cal['specific_precision']:.0%} of its specific labels right.")
    assert ":material/fact_check: " + md(caveat, 2000) in captions
    assert any(c.startswith(":material/verified: Shares corrected for the analyst's measured misclassification, "
                            "from 40 people’s labels of these failures") for c in captions)
    assert not [link for link in at.get("page_link") if "Taxonomy page" in link.proto.label]
    with store.read_connection(demo_store) as con:
        sig = stats.signature(con, analyst="offline")
    assert sig["corrected"].all()
    # people's labels, counted where given: every fourth drawn failure is a Reasoning Error to people
    people = Counter()
    for row in made["rows"]:
        people[(row["model"], row["category"])] += 1
    got = {(m, c): p for m, c, p in sig.select("model", "category", "people").iter_rows() if p}
    assert got == dict(people)
    # a model's shares over its categories add up to one (those under 1% with no label left out)
    for (model,), group in sig.group_by("model"):
        total = group["share"].sum()
        assert 0.97 <= total <= 1.0 + 1e-9, (model, total)
    tables = [d.value for d in at.dataframe if {"share", "share_ci"} <= set(d.value.columns)]
    shown = {(r["model"], r["category"]): (r["share"], r["share_ci"]) for t in tables for r in t.to_dict("records")}
    for r in sig.iter_rows(named=True):
        assert shown[(r["model"], r["category"])] == (
            fmt.pct(r["share"]), fmt.interval(r["share_low"], r["share_high"], r["failures"]))
        assert r["share_low"] <= r["share"] <= r["share_high"]
    # Reasoning Error: no failure the analyst labelled so, people's labels make it a share
    assert ("demo/atlas-7b", "Reasoning Error") in shown or ("demo/cirrus-8b", "Reasoning Error") in shown


def test_a_row_with_few_labelled_failures_shows_a_count_not_a_share(tmp_path, monkeypatch):
    db = tmp_path / "few.duckdb"
    rows = [dict(model="tiny", dataset="ds", instance_id=f"q{i}", is_correct=i >= 3,
                 **({"title": f"t{i}", "category": "Refusal" if i < 2 else "Verbosity"} if i < 3 else {}))
            for i in range(10)]
    rows += [dict(model="big", dataset="ds", instance_id=f"q{i}", is_correct=i >= 8,
                  **({"title": f"b{i}", "category": "Refusal" if i < 6 else "Verbosity"} if i < 8 else {}))
             for i in range(10)]
    seed(db, rows)
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.delenv("FAULTLINE_READ_ONLY", raising=False)
    at = run_page("pages/signatures.py")
    spec = json.loads(charts(at)[0].proto.spec)
    cells = {(r["model"], r["category"]): r for r in chart_rows(charts(at)[0])}
    tiny = cells[("tiny", "Refusal")]
    assert (tiny["label"], tiny["short_label"], tiny["interval_label"]) == ("2 of 3", "2/3", "")
    assert tiny["few_cell"] and tiny["shade"] == 0 and not tiny["dark"]
    big = cells[("big", "Refusal")]
    ci = binomtest(6, 8).proportion_ci(method="wilson")
    assert big["label"] == fmt.pct(6 / 8) and not big["few_cell"]
    assert big["shade"] == pytest.approx(ci.low)
    # the rect's colour: grey for a few-row, the interval's lower end otherwise
    rect = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "rect")
    assert rect["encoding"]["color"]["condition"] == {"test": "datum.few_cell", "value": "#ececec"}
    assert rect["encoding"]["color"]["field"] == "shade"
    table = next(d.value for d in at.dataframe if "few" in d.value.columns and "per_100" in d.value.columns)
    assert dict(zip(table["model"] + " " + table["category"], table["few"])) == {
        "big Refusal": "no", "big Verbosity": "no", "tiny Refusal": "yes", "tiny Verbosity": "yes"}


def test_taxonomy_page_draws_a_sample_loads_labels_and_calibrates(demo_store):
    from taxonomy.calibration import analyst_caveat

    at = run_page("pages/taxonomy.py")
    assert [t.value for t in at.text if "accuracy not measured" in t.value] == [
        "offline: accuracy not measured. No people's label of its failures yet: draw failures to review below."]
    at.number_input(key="sample_n").set_value(12)
    next(b for b in at.button if b.label == "Propose failures to review").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    with connect(demo_store) as con:
        assert con.execute("SELECT count(*) FROM review_samples WHERE analyst = 'offline'").fetchall() == [(12,)]
        drawn = con.execute("SELECT run_id, instance_id FROM review_samples").fetchall()
    sample = next(d.value for d in at.dataframe if "analyst_category" in d.value.columns)
    assert len(sample) == 12 and all(link.startswith("instances?models=") for link in sample["open"])
    download = next(d for d in at.get("download_button") if "Download the sample" in d.proto.label)
    assert download is not None
    # fill it in as a reviewer would (the analyst's label kept), and load it from the page
    lines = ["dataset,model,instance_id,train_trial_index,category"] + [
        f"{r['dataset']},{r['model']},{r['instance_id']},{r['train_trial_index']},{r['analyst_category']}"
        for r in sample.to_dict("records")]
    at.file_uploader(key="labels_file").set_value(("filled.csv", "\n".join(lines).encode(), "text/csv"))
    at.text_input(key="labels_reviewer").input("Ada")
    at.run()
    next(b for b in at.button if b.label == "Load labels").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [s.value for s in at.success] == [
        "12 labels of filled\\.csv loaded as people's labels (12 added, 0 already there; reviewer Ada)."]
    with connect(demo_store) as con:
        labelled = con.execute("SELECT run_id, instance_id FROM reviews WHERE action = 'label' AND reviewer = 'Ada'").fetchall()
    assert sorted(labelled) == sorted(drawn)
    next(b for b in at.button if b.label == "Calibrate").click()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    # every drawn failure kept its label: people agree with each one
    assert metrics["People's labels"] == "12" and metrics["Specific labels right"] in ("100.0%", "–")
    with connect(demo_store) as con:
        assert con.execute("SELECT count(*) FROM calibrations").fetchall() == [(1,)]
        caveat = analyst_caveat(con, "offline")
    assert caveat.startswith("Analyst measured on 12 people's labels")
    assert ":material/fact_check: " + md(caveat, 2000) in [c.value for c in at.caption]


def test_a_label_file_that_is_refused_says_why_and_loads_nothing(demo_store):
    at = run_page("pages/taxonomy.py")
    at.file_uploader(key="labels_file").set_value(("filled.csv", b"dataset,model,instance_id,category\n"
                                                   b"demo_math,demo/atlas-7b,no-such-question,Refusal\n", "text/csv"))
    at.text_input(key="labels_reviewer").input("Ada")
    at.run()
    next(b for b in at.button if b.label == "Load labels").click()
    at.run()
    errors = [e.value for e in at.error]
    assert errors == [md("filled.csv:2: the store holds no prediction of 'demo/atlas-7b' on 'demo_math' "
                         "question 'no-such-question'", 2000)]
    assert "faultline-labels-" not in errors[0]  # the temporary copy's folder is not shown
    with connect(demo_store) as con:
        assert con.execute("SELECT count(*) FROM reviews").fetchall() == [(0,)]
