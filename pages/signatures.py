"""Failure signatures: how each model's failures spread over the taxonomy's error types."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from stats import fmt
from store import queries as q
from ui import agents, charts, columns
from ui.tables import show_table
from ui.text import visible

ui.configure_page("pages/signatures.py", "Failure signatures")
ui.require_data()
f = ui.sidebar_filters()
analyst = ui.analyst_picker(f)
if analyst is None:
    ui.no_analyses()
sig = ui.load(stats.signature, analyst=analyst, **f.kwargs())
if sig.is_empty():
    st.info("No failures classified by this analyst match these filters.")
    st.stop()
ui.offline_caveat(analyst)
errors, apart = columns.split_error_types(sig)

if errors.is_empty():
    st.info("No failure under these filters has an error type: every label is one of the labels "
            "that are not error types (below), so there is no signature to draw.")
else:
    value = st.segmented_control(
        "Measure", ["share", "count", "per_100"], default="share", required=True, key="measure",
        bind="query-params",
        format_func={"share": "share of the model's errors", "count": "count",
                     "per_100": "per 100 questions"}.get,
    )
    st.caption("Each row is a model, with how many of its failures have an error type (the "
               "denominator of its shares); the shade is the measure picked above, its scale at the bottom.")
    event = charts.show(charts.signature_heatmap(errors, value), "signatures", key="heatmap",
                        on_select="rerun", selection_mode=charts.CELL)
    picked = event.selection.get(charts.CELL) if event else None

    st.caption("Click a cell, or pick one here, to open those failures.")
    left, right = st.columns(2)
    model = left.selectbox("Model", sorted(set(sig["model"])), index=None, key="cell_model", format_func=visible)
    category = right.selectbox("Category", sorted(set(sig["category"])), index=None, key="cell_category")
    if picked:
        model, category = picked[0]["model"], picked[0]["category"]
    if model and category:
        st.page_link("pages/instances.py", label=f"Open {ui.md(model)}'s {ui.md(category)} failures →",
                     icon=":material/open_in_new:",
                     query_params={**f.params(), "models": [model], "category": category,
                                   "outcome": "failed", "analyst": analyst})

    st.subheader("Small multiples")
    charts.show(charts.signature_multiples(errors), "signatures-small-multiples", key="multiples")
    ui.share_link("/signatures", {**f.params(), "analyst": analyst,
                                  "measure": value if value != "share" else None})

if not apart.is_empty():
    st.subheader("Not error types")
    st.caption("Other (no category fits), Hard to Analyze (the output gives too little to name a "
               "cause) and No Model Error (the failure is not the model's): counted apart, never "
               "part of a signature or a test. Share = of all the model's labelled failures.")
    table = apart.select("model", "category", "count", "labelled", "share")
    show_table(columns.shown(table), name="signature-apart", hide_index=True, column_config=columns.config(
        table.columns, labelled=columns.count("Labelled failures"),
        share=columns.percent("Share of labelled failures")))

agent_sides = ui.load(stats.agent_sides, analyst=analyst, models=f.models, datasets=f.datasets,
                      domains=f.domains, split=f.split)
if agent_sides:
    agents.signatures_section(agent_sides)

st.subheader("Table and human review")
table = errors.select("model", "category", "count", "failures", "share", "questions", "per_100")
show_table(columns.shown(table), name="signatures", hide_index=True, column_config=columns.config(
    table.columns, failures=columns.count("Failures with an error type"),
    share=columns.percent("Share of the model's errors")))
reviews = ui.load(q.review_summary, analyst=analyst, **f.kwargs())
show_table(reviews, name="reviews", hide_index=True, column_config=columns.config(reviews.columns))
st.caption(f"{fmt.plural(int(reviews['reviewed'].sum()) if reviews.height else 0, 'label')} "
           "reviewed by people so far; review them on the Instances page.")
if errors.is_empty():
    ui.share_link("/signatures", {**f.params(), "analyst": analyst})
