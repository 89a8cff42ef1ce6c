"""Issue #23, item 7: one formatting path. stats/fmt.py formats every percentage, p and q value,
score and scale; pages, charts (their text labels and tooltips), the CLI and the report use it,
so the same fraction reads the same everywhere."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from stats import fmt
from tests.seed_store import seed
from ui import charts
from ui.text import md

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("value, text", [
    (0.0501, "0.0501"),   # just above the line: never "0.05"
    (0.0496, "0.0496"),   # just below it: never "0.05" either
    (0.05000001, "0.05000001"),
    (0.05, "0.05"),
    (0.0449, "0.045"),
    (0.81, "0.81"),
    (0.0045, "0.0045"),
    (1.5256583158538737e-06, "1.5e-06"),
    (2.2e-308, "2.2e-308"),
    (0.0, "< 1e-300"),
    (0.9951, "1"),
    (None, "–"),
])
def test_p_values_round_and_never_land_on_the_line(value, text):
    assert fmt.p_value(value) == text


@pytest.mark.parametrize("value, text", [
    (1 / 60, "1.7%"), (0.96696, "96.7%"), (29 / 30, "96.7%"), (0.9666, "96.7%"),
    (0.0004, "< 0.1%"), (0.9996, "> 99.9%"), (0.0, "0.0%"), (1.0, "100.0%"),
])
def test_percentages_round_never_truncate(value, text):
    assert fmt.pct(value) == text


def test_scores_and_scales_print_in_the_metrics_own_units():
    assert fmt.headline(538 / 120, False, 1, 5) == "4.48 of 1–5"
    assert fmt.headline(0.3391, False, 0, 1) == "0.339 of 0–1"
    assert fmt.headline(0.0421, False, 0, 1) == "0.042 of 0–1"
    assert fmt.headline(42.06, False, 0, 100) == "42.1 of 0–100"
    assert fmt.headline(31 / 52, True) == "59.6%"  # a partial-credit mean, as Inspect's accuracy
    assert fmt.number(2.2e-308) == "2.2e-308" and fmt.number(1e300) == "1e+300"
    assert fmt.span(1, 5) == "1–5" and fmt.span(None, 5) == "up to 5" and fmt.span(0, None) == "unknown scale"
    assert fmt.signed_score(-1.1458, 1, 5) == "−1.15" and fmt.signed_score(0.0001, 0, 1) == "±0.000"
    assert fmt.score_interval(-1.27, -1.03, 1, 5, signed=True) == "−1.27 to −1.03"


def test_rules_read_as_they_are():
    assert fmt.failure_rule(3.8, 1, 5) == "failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range"
    assert fmt.failure_rule(0.3, 0, 1, lower_is_better=True) == \
        "failures: score > 0.3 of 0–1 — ErrorMap's 0.7 of the range"
    assert fmt.failure_rule(4.2, 1, 5, set_by="you") == "failures: score < 4.2 of 1–5 — set for this view, 0.8 of the range"
    assert fmt.pass_rule("aci_bench_accuracy", 3.8, 5.0, False, "helm display name", metric_min=1.0) == \
        "pass when aci_bench_accuracy ≥ 3.8 (scale 1–5, from the helm display name)"
    assert fmt.pass_rule("exact_match", 0.7, 1.0, False, "registry", metric_min=0.0, binary=True) == \
        "pass = correct (exact_match is 0/1, from the registry)"


def test_a_heatmap_cell_reads_what_the_table_reads():
    """1/60 was 1.7% in the heatmap and 1.6% in the table (a stepped number column truncates)."""
    import polars as pl

    from ui import columns

    sig = pl.DataFrame({"model": ["m"], "category": ["Refusal"], "count": [1], "failures": [60], "share": [1 / 60],
                        "per_100": [1.0]})
    cell = charts._cell_label(sig, "share")
    assert cell["label"].to_list() == cell["share_text"].to_list() == ["1.7%"]
    assert columns.shown(sig)["share"].to_list() == ["1.7%"]
    spec = charts.signature_heatmap(sig, "share").to_dict()
    tooltip = spec["layer"][0]["encoding"]["tooltip"]
    assert {"field": "share_text", "type": "nominal", "title": "share"} in tooltip


def test_the_report_prints_what_the_pages_print(tmp_db):
    from stats.report import build_report
    import store

    rows = []
    for i in range(60):
        rows.append(dict(model="A", dataset="ds", instance_id=f"q{i}", is_correct=i >= 1,
                         **({"title": "r", "category": "Refusal"} if i < 1 else {})))
        rows.append(dict(model="B", dataset="ds", instance_id=f"q{i}", is_correct=i >= 2,
                         **({"title": "s", "category": "Refusal"} if i < 2 else {})))
    seed(tmp_db, rows)
    with store.read_connection(tmp_db) as con:
        html, _ = build_report(con)
    assert "98.3%" in html and "96.7%" in html  # 59/60 and 58/60, rounded


def test_data_page_prints_a_tiny_harness_number_readably(tmp_db, monkeypatch):
    seed(tmp_db, [dict(model="m", dataset="ds", instance_id="q1", is_correct=True,
                       run={"harness_value": 2.2e-308, "harness_metric": "acc"})])
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/data.py")
    at.run()
    assert not at.exception
    runs = next(d.value for d in at.dataframe if "harness_value" in d.value.columns)
    assert runs["harness_value"].tolist() == ["2.2e-308"]


def test_instance_view_prints_the_scale_from_its_bottom(tmp_db, monkeypatch):
    run = {"main_metric": "aci_bench_accuracy", "pass_threshold": 3.8, "metric_min": 1.0, "metric_max": 5.0,
           "scale_source": "helm display name", "lower_is_better": False}
    seed(tmp_db, [dict(model="m", dataset="aci", instance_id="q1", is_correct=False, score=10 / 3, run=run)])
    monkeypatch.setenv("FAULTLINE_DB", str(tmp_db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/instances.py")
    at.query_params.update(instance="aci:q1")
    at.run()
    assert not at.exception
    rule = md("pass when aci_bench_accuracy ≥ 3.8 (scale 1–5, from the helm display name)", 400)
    assert f"{md('aci_bench_accuracy')} = 3.333 · {rule}" in [c.value for c in at.caption]
    # moved above the score, the verdict says what the ingest decided
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.switch_page("pages/instances.py")
    at.query_params.update(instance="aci:q1", threshold="aci:3")
    at.run()
    assert not at.exception
    notes = [c.value for c in at.caption if c.value.startswith("Note:")]
    assert notes == ["Note: passed under the analysis threshold set for this view; as ingested it failed"]


def test_a_long_dataset_name_widens_its_column_from_the_error_titles_room():
    import polars as pl

    from ui import columns

    base = columns.INSTANCE_WIDTHS
    short = pl.DataFrame({"dataset": ["mmlu"], "instance_id": ["id7"], "model": ["m"]})
    assert columns.instance_widths(short) == base
    assert columns.instance_widths(short.clear()) == base
    # 28 characters: 28 * 7.5 + 20 = 230 px wanted, 90 px to give (error title 200 -> 110)
    long = pl.DataFrame({"dataset": ["a-benchmark-with-a-long-name"], "instance_id": ["q000"],
                         "model": ["provider-0/a-rather-long-model-name-0b-instruct-v0.0"]})
    widths = columns.instance_widths(long)
    assert (widths["dataset"], widths["error_title"], widths["model"]) == (220, 110, 150)
    # 19 characters (163 px): the id and then the model get what is left
    mid = pl.DataFrame({"dataset": ["GENERATED-repo-task"], "instance_id": ["django__django-11099"],
                        "model": ["org/agent"]})
    widths = columns.instance_widths(mid)
    assert (widths["dataset"], widths["instance_id"], widths["error_title"]) == (163, 142, 110)
    # the key columns keep their total, so they still fit a 1280 px window
    for frame in (long, mid):
        assert sum(columns.instance_widths(frame).values()) == sum(base.values())


def test_a_store_from_before_018_gets_its_scores(tmp_db):
    import store
    from store.migrations import MIGRATIONS

    seed(tmp_db, [dict(model="m", dataset="d", instance_id=f"q{i}", is_correct=i > 0, score=i / 4,
                       title="t" if i == 0 else None, category="Refusal" if i == 0 else None) for i in range(4)])
    con = duckdb.connect(str(tmp_db))
    con.execute("ALTER TABLE latest_outcomes DROP COLUMN score")
    con.execute("ALTER TABLE latest_labels DROP COLUMN score")
    con.execute("DELETE FROM schema_migrations WHERE name = '018_scores_in_latest'")
    con.close()
    with store.write_session(tmp_db):
        pass  # the upgrade
    con = duckdb.connect(str(tmp_db), read_only=True)
    assert con.execute("SELECT instance_id, score FROM latest_outcomes ORDER BY 1").fetchall() == [
        ("q0", 0.0), ("q1", 0.25), ("q2", 0.5), ("q3", 0.75)]
    assert con.execute("SELECT instance_id, score FROM latest_labels").fetchall() == [("q0", 0.0)]
    assert con.execute("SELECT name FROM schema_migrations ORDER BY id DESC LIMIT 1").fetchall() == [
        (MIGRATIONS[-1][0],)]
    con.close()
