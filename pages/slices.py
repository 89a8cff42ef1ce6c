"""Where each error type concentrates: category shares by dataset and by domain."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from stats.shares import FEW
from ui import agreement, charts, columns
from ui.urlstate import seed_one, warn_unknown
from ui.tables import show_table
from ui.text import visible

ui.configure_page("pages/slices.py", "Slices: where each error type concentrates")
ui.require_data()
f = ui.sidebar_filters()
analyst = ui.analyst_picker(f)
if analyst is None:
    ui.no_analyses()

slices = {by: ui.load(stats.signature, analyst=analyst, by=by, **f.kwargs()) for by in ("dataset", "domain")}
models = sorted(set().union(*(set(sl["model"]) for sl in slices.values())))
# one model at a time: side-by-side panels of 57 subjects × 20 categories were unreadable, and
# drawing every model's heatmaps (as tabs do) costs seconds at ten models
warn_unknown("model", "model", models)
# it opens on the model with most failures under an error type: one whose every label is Hard to
# Analyze has no slice to show
model = st.selectbox("Model", models, format_func=visible,
                     **seed_one("model", models, stats.most_typed_model(slices["dataset"]) or models[0])
                     ) if models else None
ui.offline_caveat(analyst)
for by, label in (("dataset", "By dataset"), ("domain", "By domain (e.g. MMLU subject)")):
    st.subheader(label)
    if by == "dataset" and model:
        # what the failures below are failures of: the model's result and the line that picks them
        results = ui.load(stats.model_accuracy, **{**f.kwargs(), "models": [model]}, by="dataset")
        if not results.is_empty():
            table = columns.results_table(results).drop("model")
            show_table(table, name="slices-results", hide_index=True, column_config=columns.config(table.columns))
            ui.rules_caption(results)
    errors, apart = columns.split_error_types(slices[by].filter(slices[by]["model"] == model))
    if errors.is_empty() and apart.is_empty():
        st.info("No labelled failures of this analyst match these filters.")
        continue
    if errors.is_empty():
        st.info(f"No failure of this model has an error type in any {by}; only labels that are "
                "not error types (below).")
    else:
        every = sorted(set(slices[by].filter(slices[by]["error_type"])["category"]))
        charts.show(charts.slice_heatmap(errors, by, every), f"slices-{model}-by-{by}", key=f"slices-{by}")
        st.caption(f"Cell = the share of the model's failures in the {by} whose true category is this "
                   f"one (every failure in the {by} is the denominator); shade = the lower end of its 95% "
                   f"interval, so a share resting on a few failures stays pale. A grey cell reading k/n is a "
                   f"{by} with fewer than {FEW} labelled failures: the analyst's count there, of its labels. "
                   "The intervals are in the table and the tooltips.")
        agreement.shares_caption(slices[by].filter(slices[by]["model"] == model), analyst, f, by=by)
        table = columns.share_table(errors, by, "category")
        show_table(table, name=f"slices-by-{by}", hide_index=True, column_config=columns.share_config(
            table.columns, failures=columns.count(f"Failures in the {by} (denominator)")))
    if not apart.is_empty():
        table = columns.share_table(apart, by, "category").drop("questions", "per_100", strict=False)
        with st.expander(f"Not error types, by {by} (counted apart, never tested)"):
            show_table(table, name=f"slices-by-{by}-apart", hide_index=True, column_config=columns.share_config(
                table.columns, failures=columns.count(f"Failures in the {by} (denominator)")))
ui.share_link("/slices", {**f.params(), "analyst": analyst, "model": model})
