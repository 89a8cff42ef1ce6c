"""Failure signatures: how each model's failures spread over the taxonomy's error types, each
share with its 95% interval (stats/shares.py: corrected by people's reviews where there are any)."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from stats import fmt
from stats.shares import FEW
from store import queries as q
from ui import agents, agreement, charts, columns
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
    st.info("No labelled failures of this analyst match these filters.")
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
        format_func={"share": "share of the model's failures (95% interval)", "count": "count",
                     "per_100": "per 100 questions"}.get,
    )
    if value == "share":
        st.caption("Each row is a model, with how many of its failures the analyst labelled out of all "
                   "of them (every failure under the pass rule: the shares' denominator). A cell is the "
                   "share of the model's failures whose true category is this one, its 95% interval "
                   "under it where the cell has room. **Shade = the lower end of that interval**: a "
                   "large share the data support is dark, an uncertain one stays pale. A grey cell "
                   f"reading “k of n” (failures the analyst filed here, of those it labelled) is a model with "
                   f"fewer than {FEW} labelled failures: too few for a share.")
    else:
        st.caption("Each row is a model, with how many of its failures the analyst labelled out of all "
                   "of them; the shade is the measure picked above (the analyst's own count), its scale "
                   "at the bottom.")
    event = charts.show(charts.signature_heatmap(errors, value), "signatures", key="heatmap",
                        on_select="rerun", selection_mode=charts.CELL)
    picked = event.selection.get(charts.CELL) if event else None
    agreement.shares_caption(sig, analyst, f)

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
    st.caption("Bars: the share of the model's failures (every failure under the rule) whose true category "
               f"is this one; black rules: its 95% interval; a pale bar: fewer than {FEW} labelled failures.")
    charts.show(charts.signature_multiples(errors), "signatures-small-multiples", key="multiples")
    ui.share_link("/signatures", {**f.params(), "analyst": analyst,
                                  "measure": value if value != "share" else None})

if not apart.is_empty():
    st.subheader("Not error types")
    st.caption("Other (no category fits), Hard to Analyze (the output gives too little to name a "
               "cause) and No Model Error (the failure is not the model's): never part of a signature "
               "or a test, but in the same denominator — every failure of the model — so a row here "
               "and the error types above add up to the model's failures.")
    table = columns.share_table(apart, "model", "category").drop("questions", "per_100", strict=False)
    show_table(table, name="signature-apart", hide_index=True, column_config=columns.share_config(table.columns))

agent_sides = ui.load(stats.agent_sides, analyst=analyst, models=f.models, datasets=f.datasets,
                      domains=f.domains, split=f.split)
if agent_sides:
    agents.signatures_section(agent_sides)

st.subheader("Table and human review")
table = columns.share_table(errors, "model", "category")
show_table(table, name="signatures", hide_index=True, column_config=columns.share_config(table.columns))
reviews = ui.load(q.review_summary, analyst=analyst, **f.kwargs())
show_table(reviews, name="reviews", hide_index=True, column_config=columns.config(reviews.columns))
people = int(sig["people"].sum())
st.caption(f"{fmt.plural(int(reviews['reviewed'].sum()) if reviews.height else 0, 'label')} of this analyst "
           f"reviewed on the Instances page so far; {fmt.plural(people, 'failure')} here carry a people's "
           "label (those reviews and label tables loaded on the Taxonomy page, where a random sample to "
           "review is drawn).")
if errors.is_empty():
    ui.share_link("/signatures", {**f.params(), "analyst": analyst})
