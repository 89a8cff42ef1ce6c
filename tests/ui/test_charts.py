"""The dashboard's charts: every kind downloads as SVG and PNG (rendered offline by vl-convert),
labels are at least 12 px, a category has one colour on every chart, and the cell text of the
signature heatmap stays readable when a click fades the other cells."""

from __future__ import annotations

import polars as pl
import pytest

from ui import charts

SIG = pl.DataFrame({
    "model": ["m1", "m1", "m2", "m2"], "category": ["Calculation Error", "Refusal", "Refusal", "Verbosity"],
    "error_type": [True] * 4, "count": [3, 1, 5, 5], "failures": [4, 4, 10, 10], "labelled": [6, 6, 10, 10],
    "share": [0.75, 0.25, 0.5, 0.5], "questions": [20, 20, 20, 20], "per_100": [15.0, 5.0, 25.0, 25.0],
    "model_label": ["m1 (4)", "m1 (4)", "m2 (10)", "m2 (10)"]})
DELTA = pl.DataFrame({"category": ["Refusal", "Verbosity"], "finding": ["larger in B", "too few to tell"],
                      "a_count": [1, 0], "b_count": [5, 5], "delta": [0.25, 0.5], "delta_low": [-0.1, 0.1],
                      "delta_high": [0.5, 0.8], "q_text": ["0.04", "0.2"]})
# stats.model_accuracy rows: a 0/1 metric HELM runs by subject, and a 1–5 jury mean with its threshold
ACC = pl.DataFrame({"model": ["m1", "m2"], "dataset": ["mmlu", "mmlu"], "n": [20, 20], "correct": [10, 15],
                    "accuracy": [0.5, 0.75], "ci_low": [0.3, 0.5], "ci_high": [0.7, 0.9], "n_domains": [2, 2],
                    "headline": [0.52, 0.74], "headline_ci_low": [0.3, 0.5], "headline_ci_high": [0.72, 0.9],
                    "headline_interval": ["t over domains"] * 2, "headline_kind": ["pass rate"] * 2, "headline_of": ["mean of the domains' pass rates"] * 2,
                    "headline_as_rate": [True, True], "scale_min": [0.0, 0.0], "scale_max": [1.0, 1.0],
                    "analysis_threshold": [None, None], "analysis_rule": ["failures: exact_match = 0"] * 2,
                    "failures": [10, 5], "failure_rate": [0.5, 0.25]})
JURY = ACC.with_columns(
    accuracy=pl.lit(None, pl.Float64), headline=pl.Series([4.48, 3.1]), headline_ci_low=pl.Series([4.3, 2.9]),
    headline_ci_high=pl.Series([4.6, 3.3]), headline_interval=pl.lit("t"), headline_kind=pl.lit("mean score"), headline_of=pl.lit("mean aci_bench_accuracy"),
    headline_as_rate=pl.lit(False), scale_min=pl.lit(1.0), scale_max=pl.lit(5.0), analysis_threshold=pl.lit(3.8),
    analysis_rule=pl.lit("failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range"), n_domains=pl.lit(1))
# stats.signature rows since issue 32: each share with its 95% interval; m1 has too few labelled failures
SIG_CI = SIG.with_columns(share_low=pl.Series([0.3, 0.05, 0.24, 0.24]), share_high=pl.Series([0.95, 0.7, 0.76, 0.76]),
                          few=pl.Series([True, True, False, False]), people=pl.Series([0, 0, 2, 1]),
                          labelled=pl.Series([4, 4, 10, 10]))
SLICE = SIG.rename({"model": "domain"}).with_columns(pl.lit("m1").alias("model"))

BUILDERS = {
    "heatmap": lambda: charts.signature_heatmap(SIG, "share"),
    "multiples": lambda: charts.signature_multiples(SIG),
    "heatmap-intervals": lambda: charts.signature_heatmap(SIG_CI, "share"),
    "multiples-intervals": lambda: charts.signature_multiples(SIG_CI),
    "slice-intervals": lambda: charts.slice_heatmap(SIG_CI.rename({"model": "domain"}).with_columns(model=pl.lit("m1")),
                                                    "domain", ["Calculation Error", "Refusal", "Verbosity"]),
    "delta": lambda: charts.delta_chart(DELTA, "m1", "m2"),
    "results": lambda: charts.headline(ACC, "mmlu"),
    "results-jury": lambda: charts.headline(JURY, "aci_bench"),
    "slice": lambda: charts.slice_heatmap(SLICE, "domain", ["Calculation Error", "Refusal", "Verbosity"]),
}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_every_chart_downloads_as_svg_and_png(kind):
    chart = BUILDERS[kind]()
    svg = charts.svg_bytes(chart).decode()
    assert svg.startswith("<svg") and "</svg>" in svg
    assert charts.png_bytes(chart)[:8] == b"\x89PNG\r\n\x1a\n"
    config = charts.style(chart).to_dict()["config"]
    assert config["axis"]["labelFontSize"] >= 12 and config["legend"]["labelFontSize"] >= 12


def test_a_category_has_one_colour_everywhere():
    one = charts.category_scale(["Refusal", "Calculation Error"]).to_dict()
    other = charts.category_scale(["Verbosity", "Refusal", "Hard to Analyze", "My Custom Type"]).to_dict()
    colour = lambda scale, c: scale["range"][scale["domain"].index(c)]  # noqa: E731
    assert colour(one, "Refusal") == colour(other, "Refusal") == charts.category_colour("Refusal")
    assert len({charts.category_colour(c) for c in charts._ERRORATLAS}) == 18
    assert charts.category_colour("Hard to Analyze") in charts._GREYS.values()
    assert charts.category_colour("My Custom Type") == charts.category_colour("My Custom Type")


def test_heatmap_text_is_white_only_on_a_dark_cell_that_is_not_faded():
    layers = charts.signature_heatmap(SIG, "share").to_dict()["layer"]
    color = layers[1]["encoding"]["color"]
    # white needs both: the cell is selected (or nothing is) and it is dark
    assert color == {"condition": [{"test": {"and": [{"param": "cell"}, "datum.dark"]}, "value": "white"}],
                     "value": charts.INK}
    assert "white" in charts.svg_bytes(charts.signature_heatmap(SIG, "share")).decode()  # Vega compiles it


def test_delta_chart_colours_marks_by_the_finding_with_a_legend():
    spec = charts.delta_chart(DELTA, "m1", "m2").to_dict()
    colour = [layer["encoding"]["color"] for layer in spec["layer"] if "color" in layer.get("encoding", {})][0]
    assert colour["field"] == "finding" and colour["title"].startswith("Finding")
    assert colour["scale"]["domain"] == ["larger in B", "too few to tell"]
    assert colour["scale"]["range"] == [charts.FINDINGS["larger in B"], charts.FINDINGS["too few to tell"]]


def test_a_share_is_shaded_by_its_intervals_lower_end_and_a_few_row_shows_its_count():
    cells = charts._cell_label(SIG_CI, "share").to_dicts()
    few, full = cells[0], cells[2]
    assert (few["label"], few["short_label"], few["interval_label"], few["shade"]) == ("3 of 4", "3/4", "", 0.0)
    assert (full["label"], full["interval_label"], full["shade"]) == ("50.0%", "24–76%", 0.24)
    assert full["interval_text"] == "24–76%"  # fmt.interval: whole percents below 100 failures
    svg = charts.svg_bytes(charts.signature_heatmap(SIG_CI, "share")).decode()
    assert "3 of 4" in svg and "24–76%" in svg and charts.FEW_FILL in svg  # the few-row's rect is drawn, grey


def test_small_multiples_draw_interval_rules_and_an_axis_under_every_panel():
    spec = charts.signature_multiples(SIG_CI).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["spec"]["layer"]]
    assert marks == ["bar", "rule"]
    rule = spec["spec"]["layer"][1]["encoding"]
    assert (rule["x"]["field"], rule["x2"]["field"]) == ("share_low", "share_high")
    assert spec["resolve"]["axis"]["x"] == "independent"
