"""Failure signatures: how each model's failures spread over the taxonomy."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from store import queries as q
from ui import charts, columns

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

value = st.segmented_control(
    "Measure", ["share", "count", "per_100"], default="share", required=True, key="measure",
    bind="query-params",
    format_func={"share": "share of the model's failures", "count": "count",
                 "per_100": "per 100 questions"}.get,
)
event = st.altair_chart(charts.signature_heatmap(sig, value), on_select="rerun",
                        selection_mode=charts.CELL, key="heatmap", width="stretch")
picked = event.selection.get(charts.CELL) if event else None

st.caption("Click a cell, or pick one here, to open those failures.")
left, right = st.columns(2)
model = left.selectbox("Model", sorted(set(sig["model"])), index=None, key="cell_model")
category = right.selectbox("Category", sorted(set(sig["category"])), index=None, key="cell_category")
if picked:
    model, category = picked[0]["model"], picked[0]["category"]
if model and category:
    st.page_link("pages/instances.py", label=f"Open {ui.md(model)}'s {category} failures →",
                 icon=":material/open_in_new:",
                 query_params={**f.params(), "models": [model], "category": category,
                               "outcome": "failed", "analyst": analyst})

st.subheader("Small multiples")
st.altair_chart(charts.signature_multiples(sig))

st.subheader("Table and human review")
reviews = ui.load(q.review_summary, analyst=analyst, **f.kwargs())
st.dataframe(sig, hide_index=True, column_config=columns.config(sig.columns))
st.dataframe(reviews, hide_index=True, column_config=columns.config(reviews.columns))
ui.share_link("/signatures", {**f.params(), "analyst": analyst,
                              "measure": value if value != "share" else None})
