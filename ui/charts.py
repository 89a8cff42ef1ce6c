"""Altair charts fit for a paper, and the one way pages draw them (`show`): full width, labels of
at least 12 px in dark ink, one colour per taxonomy category on every page, a legend for every
colour, and each chart downloadable as SVG and PNG (drawn on the server by vl-convert, offline).

Builders take the frames the stats/queries layer returns, unchanged.
"""

from __future__ import annotations

import re
import zlib

import altair as alt
import polars as pl
import streamlit as st

from core.counts import UNDER_THRESHOLD
from stats import fmt
from taxonomy.catalog import NOT_ERROR_TYPES

CELL = "cell"  # the selection name pages read back from st.altair_chart
ROW = 34  # px per heatmap row: room for the number in each cell
INK, MUTED = "#262730", "#555a66"
FONT_SIZE = 13
# category names above the columns, steep enough that 20 of them fit side by side; Vega-Lite
# otherwise drops labels that overlap, and a column then seems to belong to its neighbour's name
TOP_LABELS = alt.Axis(labelAngle=-50, labelLimit=240, labelOverlap=False, orient="top")
# text on a cell darker than this share of the colour scale is drawn white
DARK = 0.55
DOWNLOAD_WIDTH = 900  # px: a downloaded chart has no container to fill

# One colour per category, the same on every page: the 18 ErrorAtlas error types take Tableau's
# 20 colours less its two greys, in the taxonomy's order; labels that are not error types are
# grey; a category of a custom taxonomy gets a colour from its name (stable across pages/runs).
_TABLEAU = ["#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
            "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#bcbd22", "#dbdb8d",
            "#17becf", "#9edae5"]
_ERRORATLAS = ["Calculation Error", "Reasoning Error", "Incomplete Content", "Constraint Violation",
               "Language Issue", "Data Extraction", "Naming Error", "Incorrect Method/Application",
               "Factual Error", "Formatting Error", "Question Misinterpretation", "Code Error",
               "Unwarranted Assumption", "Irrelevant/Off-Topic", "Verbosity", "Policy Violation",
               "Refusal", "Hallucination"]
_GREYS = dict(zip(NOT_ERROR_TYPES, ["#8c8c8c", "#b5b5b5", "#d9d9d9", "#a3a3a3"]))
CATEGORY_COLOURS = {**dict(zip(_ERRORATLAS, _TABLEAU)), **_GREYS}

# the compare page's findings: the chart's marks and the table's column say the same thing
FINDINGS = {"larger in B": "#d62728", "larger in A": "#1f77b4", "within the analyst's error": "#e5c07b",
            "not significant": "#8c8c8c", "too few to tell": "#c7c7c7"}

# legend formats: round ticks (0%, 20%, …); cells and tooltips carry the one-decimal figures.
# The share's shade is the LOWER end of its 95% interval: a share resting on few failures, or on
# an analyst people found often wrong, is wide and stays pale; a dark cell is a large share the
# data support (stats/shares.py).
MEASURES = {
    "share": ("share of the model's failures: the lower end of its 95% interval", ".0%"),
    "count": ("failures in the category", ",d"),
    "per_100": ("failures per 100 questions answered", ".1f"),
}
# a cell of a row with fewer than FEW labelled failures (stats/shares.py): no shade, its count as text
FEW_FILL = "#ececec"

def category_colour(category: str) -> str:
    if category in CATEGORY_COLOURS:
        return CATEGORY_COLOURS[category]
    return _TABLEAU[zlib.crc32(category.encode()) % len(_TABLEAU)]


def category_scale(categories) -> alt.Scale:
    """The colour scale of these categories, the same colours everywhere."""
    domain = sorted(set(categories))
    return alt.Scale(domain=domain, range=[category_colour(c) for c in domain])


# room around the drawing for what Vega measures short: a title's ascent and the corner of the
# last rotated column label (tests/ui/test_browser.py checks every text lies inside the chart's box)
PADDING = {"left": 5, "top": 8, "right": 18, "bottom": 5}


def style(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Paper-ready text: 13 px labels and titles in dark ink (Streamlit's default is ~10 px grey)."""
    return (chart.properties(padding=PADDING).configure_axis(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelColor=INK,
                                 titleColor=INK, titleFontWeight="normal")
            .configure_legend(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelColor=INK,
                              titleColor=INK, titleFontWeight="normal", labelLimit=320)
            .configure_header(labelFontSize=FONT_SIZE, titleFontSize=FONT_SIZE, labelColor=INK)
            .configure_title(fontSize=FONT_SIZE + 2, color=INK, anchor="start")
            .configure_text(fontSize=FONT_SIZE))


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")[:120] or "chart"


def _spec(chart: alt.TopLevelMixin) -> dict:
    # a facet sizes its own panels; a single or layered view gets the width a page would give it
    sized = chart if isinstance(chart, (alt.FacetChart, alt.ConcatChart, alt.VConcatChart,
                                        alt.HConcatChart)) else chart.properties(width=DOWNLOAD_WIDTH)
    return style(sized).to_dict()


def svg_bytes(chart: alt.TopLevelMixin) -> bytes:
    import vl_convert as vlc  # imported on a click only

    return vlc.vegalite_to_svg(_spec(chart)).encode()


def png_bytes(chart: alt.TopLevelMixin) -> bytes:
    import vl_convert as vlc

    return vlc.vegalite_to_png(_spec(chart), scale=2)


def show(chart: alt.TopLevelMixin, name: str, key: str | None = None, **kwargs):
    """Draw `chart` full width with its download buttons (SVG, PNG; made when clicked); extra
    keyword arguments go to st.altair_chart (selections). Returns st.altair_chart's result."""
    event = st.altair_chart(style(chart), width="stretch", key=key, **kwargs)
    stem = _file_name(f"faultline-{name}")
    left, right, _ = st.columns([1, 1, 6])
    left.download_button("SVG", lambda: svg_bytes(chart), file_name=f"{stem}.svg",
                         mime="image/svg+xml", on_click="ignore", key=f"svg-{key or stem}",
                         help="Download this chart as SVG (vector; for papers)", width="stretch")
    right.download_button("PNG", lambda: png_bytes(chart), file_name=f"{stem}.png",
                          mime="image/png", on_click="ignore", key=f"png-{key or stem}",
                          help="Download this chart as PNG (2× resolution)", width="stretch")
    return event


# px a heatmap cell needs for its number at 13 px: "100.0%" whole, "100%" rounded
FULL_LABEL_PX, SHORT_LABEL_PX = 50, 36
SHARE_ROW = 44  # px per heatmap row when a cell holds the share and its interval below it


def _short(v: float | None, value: str) -> str:
    """A cell's number in fewer characters: a share as a whole percent (never "0%" when it is
    not zero), a rate per 100 to whole numbers, a count as it is."""
    if v is None:
        return ""
    if value == "share":
        return "<1%" if 0 < v < 0.005 else f"{v:.0%}"
    if value == "per_100":
        return "<1" if 0 < v < 0.5 else f"{v:.0f}"
    return fmt.count(v)


def _whole_interval(low: float | None, high: float | None) -> str:
    """A share's 95% interval in whole percents, short enough for a cell: "20–48%"."""
    if low is None or high is None:
        return ""
    lo, hi = round(low * 100), round(high * 100)
    return f"{'<1' if lo == 0 and low > 0 else lo}–{hi}%"


def _cell_label(df: pl.DataFrame, value: str) -> pl.DataFrame:
    """The text drawn in each cell, in the legend's unit, by stats/fmt.py (as every table prints
    the same number); a non-zero share never reads "0%". Rows of a signature with intervals
    (`share_low`, `share_high`, `few`, `labelled`) also get: the interval under the share
    (`interval_label`, whole percents; `interval_text` for the tooltip as tables print it), the
    shade (`shade`: the interval's lower end for a share, else the value) and, for a row with few
    labelled failures, its count instead of a share ("1 of 3")."""
    texts = {"share": fmt.pct, "per_100": lambda v: "<0.1" if v < 0.05 else f"{v:.1f}",
             "count": fmt.count}[value]
    n = df.height
    few = df["few"].to_list() if "few" in df.columns else [False] * n
    counts = df["count"].to_list() if "count" in df.columns else [None] * n
    labelled = df["labelled"].to_list() if "labelled" in df.columns else [None] * n
    has_interval = {"share_low", "share_high"} <= set(df.columns)
    lows = df["share_low"].to_list() if has_interval else [None] * n
    highs = df["share_high"].to_list() if has_interval else [None] * n
    failures = df["failures"].to_list() if "failures" in df.columns else [0] * n
    values = df[value].to_list()
    share_mode = value == "share"
    few_text = [share_mode and bool(f) for f in few]
    labels = [f"{fmt.count(c)} of {fmt.count(m)}" if f else texts(v)
              for f, c, m, v in zip(few_text, counts, labelled, values)]
    shorts = [f"{fmt.count(c)}/{fmt.count(m)}" if f else _short(v, value)
              for f, c, m, v in zip(few_text, counts, labelled, values)]
    shade = lows if share_mode and has_interval else values
    # a few-row's cell is painted grey by the chart's condition; its shade is 0, not missing (Vega-Lite
    # drops a rect whose colour field is null, condition or not)
    shade = [0.0 if f else s for f, s in zip(few_text, shade)]
    top = max((s for s in shade if s is not None), default=0) or 1
    return df.with_columns(
        label=pl.Series(labels, dtype=pl.String),
        short_label=pl.Series(shorts, dtype=pl.String),
        share_text=pl.Series([fmt.pct(v) for v in df["share"].to_list()], dtype=pl.String),
        interval_label=pl.Series(["" if f or not share_mode else _whole_interval(lo, hi)
                                  for f, lo, hi in zip(few_text, lows, highs)], dtype=pl.String),
        interval_text=pl.Series([fmt.interval(lo, hi, k or 0) if has_interval else "–"
                                 for lo, hi, k in zip(lows, highs, failures)], dtype=pl.String),
        shade=pl.Series(shade, dtype=pl.Float64),
        few_cell=pl.Series(few_text, dtype=pl.Boolean),
        dark=pl.Series([not f and s is not None and s / top > DARK for f, s in zip(few_text, shade)],
                       dtype=pl.Boolean))


def _tooltip(data: pl.DataFrame, first: list) -> list:
    """The tooltip of a share's cell or bar: the share, its interval, what it rests on."""
    tips = [*first, alt.Tooltip("share_text:N", title="share")]
    if "interval_text" in data.columns:
        tips.append(alt.Tooltip("interval_text:N", title="95% interval"))
    tips.append(alt.Tooltip("count:Q", title="failures in category (analyst)", format=",d"))
    if "people" in data.columns:
        tips.append(alt.Tooltip("people:Q", title="people's labels of it", format=",d"))
    if "failures" in data.columns:
        tips.append(alt.Tooltip("failures:Q", title="the model's failures (denominator)", format=",d"))
    if "labelled" in data.columns:
        tips.append(alt.Tooltip("labelled:Q", title="failures the analyst labelled", format=",d"))
    return tips


def headline(df: pl.DataFrame, dataset: str, groups: dict[str, int] | None = None) -> alt.Chart:
    """Each model's result on one dataset as the harness reports it (`stats.model_accuracy`
    rows): the harness's number with its 95% interval, on the metric's own scale (a pass rate on
    0–100%, a jury mean on 1–5), best first; for a continuous metric the analysis threshold is a
    dashed red line (the failures are the questions on its wrong side); for a dataset HELM runs
    domain by domain, the rate pooled over questions is a grey diamond beside HELM's mean.
    `groups` (stats.leaderboard: model → group): the models the data cannot tell apart share a
    colour, alternating from group to group, and the group is named at the right."""
    from stats.headline import headline_interval_text, headline_text, is_continuous

    rows = df.to_dicts()
    first = rows[0]
    rate = bool(first["headline_as_rate"])
    low, high = (0.0, 1.0) if rate else (first["scale_min"], first["scale_max"])
    data = df.with_columns(
        harness=pl.Series([headline_text(r) for r in rows], dtype=pl.String),
        interval=pl.Series([headline_interval_text(r) for r in rows], dtype=pl.String),
        failed=pl.Series([f"{fmt.count(r['failures'])} of {fmt.count(r['n'])} ({fmt.pct(r['failure_rate'])})"
                          if is_continuous(r) else "the same number" for r in rows], dtype=pl.String),
        pooled=pl.Series([fmt.pct(r["accuracy"]) for r in rows], dtype=pl.String),
    )
    best_first = alt.EncodingSortField("headline", op="max", order="descending")
    base = alt.Chart(data).encode(y=alt.Y("model:N", sort=best_first, title=None,
                                          axis=alt.Axis(labelLimit=360)))
    scale = alt.Scale(domain=[low, high]) if low is not None and high is not None else alt.Undefined
    what = first["headline_of"] or "the harness's number"
    x = alt.X("headline_ci_low:Q", scale=scale, axis=alt.Axis(format="%") if rate else alt.Undefined,
              title=f"{what} (dot) with its 95% interval ({first['headline_interval'] or 'none'})")
    tooltip = ["model", alt.Tooltip("harness:N", title="the harness's number"),
               alt.Tooltip("interval:N", title="95% interval"), alt.Tooltip("n:Q", format=",d", title="questions"),
               alt.Tooltip("failed:N", title=UNDER_THRESHOLD.name)]
    layers = [base.mark_rule(strokeWidth=2, color=INK).encode(x=x, x2="headline_ci_high:Q")]
    if rate and (df["n_domains"] > 1).any() and df["accuracy"].is_not_null().any() \
            and (df["headline"] - df["accuracy"]).abs().max() > 0:
        tooltip.append(alt.Tooltip("pooled:N", title="pooled over questions"))
        layers.append(base.mark_point(shape="diamond", size=110, filled=False, color=MUTED, strokeWidth=2)
                      .encode(x="accuracy:Q", tooltip=tooltip))
    line = first["analysis_threshold"] if any(is_continuous(r) for r in rows) else None
    if line is not None:
        layers.append(alt.Chart(pl.DataFrame({"x": [line], "rule": [first["analysis_rule"]]}))
                      .mark_rule(color="#d62728", strokeDash=[5, 3], strokeWidth=2)
                      .encode(x="x:Q", tooltip=[alt.Tooltip("rule:N", title="analysis threshold")]))
    if not groups:
        layers.append(base.mark_point(filled=True, size=80, color="#1f77b4").encode(x="headline:Q", tooltip=tooltip))
        return alt.layer(*layers).properties(title=dataset, height=alt.Step(26))
    grouped = data.with_columns(group=pl.Series([f"group {groups.get(r['model'], 0)}" for r in rows], dtype=pl.String),
                                shade=pl.Series([groups.get(r["model"], 0) % 2 for r in rows], dtype=pl.Int64))
    gbase = alt.Chart(grouped).encode(y=alt.Y("model:N", sort=best_first, title=None, axis=alt.Axis(labelLimit=360)))
    colour = alt.Color("shade:N", scale=alt.Scale(domain=[1, 0], range=["#1f77b4", "#ff7f0e"]), legend=None)
    layers.append(gbase.mark_point(filled=True, size=80).encode(
        x="headline:Q", color=colour, tooltip=[*tooltip, alt.Tooltip("group:N", title="cannot be told apart within")]))
    right = high if low is not None and high is not None else None
    if right is not None:
        layers.append(gbase.mark_text(align="right", dx=-2, fontSize=FONT_SIZE - 1).encode(
            x=alt.datum(right), text="group:N", color=colour))
    return alt.layer(*layers).properties(title=dataset, height=alt.Step(26))


def signature_heatmap(sig: pl.DataFrame, value: str) -> alt.Chart:
    """Model × category; click a cell to select it (selection name `cell`). A share is shaded by
    the lower end of its 95% interval and written with the interval under it where the cell has
    room; a row with few labelled failures (`few`) has no shade and shows its count ("1 of 3").
    Cell text stays readable in every state: white only on a dark cell not faded by a selection."""
    title, legend_format = MEASURES[value]
    pick = alt.selection_point(name=CELL, fields=["model", "category"], on="click")
    row = "model_label" if "model_label" in sig.columns else "model"
    data = _cell_label(sig, value)
    intervals = value == "share" and "share_low" in sig.columns
    base = alt.Chart(data).encode(
        x=alt.X("category:N", title=None, axis=TOP_LABELS),
        # a row's label on two lines: the model, then how many of its failures carry a label
        y=alt.Y(f"{row}:N", title=None, axis=alt.Axis(labelLimit=360, labelExpr="split(datum.label, '\\n')",
                                                       labelOffset=-7 if row == "model_label" else 0)),
    )
    shade = alt.Color("shade:Q", scale=alt.Scale(scheme="reds", domainMin=0), title=title,
                      legend=alt.Legend(format=legend_format, orient="bottom", titleLimit=500, gradientLength=260))
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.condition("datum.few_cell", alt.value(FEW_FILL), shade) if intervals else shade,
        opacity=alt.condition(pick, alt.value(1.0), alt.value(0.35)),
        tooltip=_tooltip(data, ["model", "category"]) + [alt.Tooltip("per_100:Q", format=".1f")],
    ).add_params(pick)
    # a cell narrower than its number shows the number rounded, and one narrower still shows none
    # (the shade, the legend and the tooltip still say it): numbers never run into each other
    colour = alt.when(pick, alt.datum.dark).then(alt.value("white")).otherwise(alt.value(INK))
    wide = f"bandwidth('x') >= {FULL_LABEL_PX}"
    narrow = f"bandwidth('x') >= {SHORT_LABEL_PX} && bandwidth('x') < {FULL_LABEL_PX}"
    dy = -8 if intervals else 0
    text = base.mark_text(fontSize=FONT_SIZE, dy=dy).encode(
        text=alt.condition(wide, alt.Text("label:N"), alt.value("")), color=colour)
    short = base.mark_text(fontSize=FONT_SIZE, dy=dy).encode(
        text=alt.condition(narrow, alt.Text("short_label:N"), alt.value("")), color=colour)
    layers = [rect, text, short]
    if intervals:
        layers.append(base.mark_text(fontSize=FONT_SIZE - 1, dy=9).encode(
            text=alt.condition(wide, alt.Text("interval_label:N"), alt.value("")), color=colour))
    return alt.layer(*layers).properties(height=alt.Step(SHARE_ROW if intervals else ROW))


# The small multiples fit the main column of a 1280 px window (~820 px, MAIN_PX less slack): the
# category names (Vega-Lite draws them on each row's first panel only), then as many panels as
# fit, each at least as wide as its model's name (at ~7 px a character of 13 px text) so the
# names above them never run into each other or off the chart. Every panel has its own x axis,
# so a panel read alone (one a row, when names are long) still has its scale under it.
MAIN_PX, MULTIPLE_LABELS, MULTIPLE_MIN, PANEL_GAP, CHAR_PX = 790, 220, 150, 20, 7


def multiples_layout(models) -> tuple[int, int]:
    """(panel width, panels a row) for these model names."""
    room = MAIN_PX - MULTIPLE_LABELS
    longest = max((len(str(m)) for m in models), default=0)
    width = min(room, max(MULTIPLE_MIN, longest * CHAR_PX))
    return width, max(1, min(3, (room + PANEL_GAP) // (width + PANEL_GAP)))


def signature_multiples(sig: pl.DataFrame) -> alt.Chart:
    """One small bar chart per model: the share of its failures per category, coloured by
    category, with its 95% interval as a rule; a bar of a row with few labelled failures pale."""
    data = _cell_label(sig, "share")
    width, per_row = multiples_layout(sig["model"].unique().to_list())
    base = alt.Chart(data).encode(y=alt.Y("category:N", title=None, axis=alt.Axis(labelLimit=MULTIPLE_LABELS)))
    # no axis title: it repeated under every panel and ran into the next; the page's caption says it
    x = alt.X("share:Q", axis=alt.Axis(format="%", tickCount=4), title=None)
    bars = base.mark_bar().encode(
        x=x, color=alt.Color("category:N", scale=category_scale(sig["category"]), legend=None),
        opacity=alt.condition("datum.few_cell", alt.value(0.35), alt.value(1.0)),
        tooltip=_tooltip(data, ["model", "category"]))
    layers = [bars]
    if {"share_low", "share_high"} <= set(sig.columns):
        layers.append(base.mark_rule(color=INK, strokeWidth=1.5).encode(
            x="share_low:Q", x2="share_high:Q", tooltip=_tooltip(data, ["model", "category"])))
    return alt.layer(*layers).properties(width=width, height=alt.Step(22)).facet(
        facet=alt.Facet("model:N", title=None, header=alt.Header(labelLimit=width)), columns=per_row,
        spacing=PANEL_GAP).resolve_axis(x="independent")


def delta_title(a: str, b: str) -> list[str]:
    """The Δ axis's title on lines that fit a narrow chart: what Δ is, then which model is A and
    which B (a model name can be long; on one line with the rest it ran off both ends)."""
    return ["Δ share of errors = B's share − A's share (Newcombe 95% interval)", f"A = {a}", f"B = {b}"]


def delta_chart(df: pl.DataFrame, a: str, b: str) -> alt.Chart:
    """Δ share (B − A) per error type with Newcombe 95% intervals, sorted by effect; each mark is
    coloured by the test's finding (BH q ≤ 0.05), the same words as the table's column."""
    order = df["category"].to_list()
    present = [f for f in FINDINGS if f in set(df["finding"])]
    colour = alt.Color("finding:N", title="Finding (Fisher exact, Benjamini–Hochberg q ≤ 0.05)",
                       scale=alt.Scale(domain=present, range=[FINDINGS[f] for f in present]),
                       legend=alt.Legend(orient="bottom", direction="horizontal", titleLimit=500))
    base = alt.Chart(df).encode(
        y=alt.Y("category:N", sort=order, title=None,
                axis=alt.Axis(labelLimit=320, labelFlush=False, labelBaseline="middle")), color=colour)
    zero = alt.Chart(pl.DataFrame({"x": [0.0]})).mark_rule(color=MUTED, strokeDash=[4, 3]).encode(x="x:Q")
    rules = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("delta_low:Q", title=delta_title(a, b), axis=alt.Axis(format="%")),
        x2="delta_high:Q",
    )
    points = base.mark_point(filled=True, size=90).encode(
        x="delta:Q",
        tooltip=["category", "finding", alt.Tooltip("a_count:Q", title="A: failures", format=",d"),
                 alt.Tooltip("b_count:Q", title="B: failures", format=",d"),
                 alt.Tooltip("delta_text:N", title="Δ share (B − A)"),
                 alt.Tooltip("q_text:N", title="q (Benjamini–Hochberg)")],
    )
    return (zero + rules + points).properties(height=alt.Step(28))


def slice_heatmap(df: pl.DataFrame, by: str, categories: list[str]) -> alt.Chart:
    """Slice × category for ONE model: the share of the model's failures in the slice (every
    failure, the true category's share: stats.signature), shaded by the lower end of its 95%
    interval, so a share resting on two failures stays pale; a slice with few labelled failures
    has no shade and shows its count ("1/3": the analyst's count of its labelled failures).
    `categories` fixes the columns so every model's chart has the same ones."""
    # short texts: a slice heatmap has many narrow cells ("34%"; a few-row's count as "1/3")
    data = _cell_label(df, "share").with_columns(label=pl.col("short_label"),
                                                 dark=pl.col("shade").fill_null(0) > DARK)
    intervals = "share_low" in df.columns
    base = alt.Chart(data).encode(
        x=alt.X("category:N", title=None, scale=alt.Scale(domain=categories), axis=TOP_LABELS),
        y=alt.Y(f"{by}:N", title=None, axis=alt.Axis(labelLimit=320, labelOverlap=False)),
    )
    shade = alt.Color("shade:Q", scale=alt.Scale(scheme="reds", domain=[0, 1]),
                      title=f"share of the model's failures in the {by}: the lower end of its 95% interval",
                      legend=alt.Legend(format="%", orient="bottom", titleLimit=500, gradientLength=260))
    rect = base.mark_rect(stroke="white", strokeWidth=1).encode(
        color=alt.condition("datum.few_cell", alt.value(FEW_FILL), shade) if intervals else shade,
        tooltip=_tooltip(data, [by, "category"]),
    )
    text = base.mark_text(fontSize=12).encode(
        text="label:N", color=alt.condition("datum.dark", alt.value("white"), alt.value(INK)))
    return (rect + text).properties(height=alt.Step(26))
