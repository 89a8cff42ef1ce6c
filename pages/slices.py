"""Where each error type concentrates: category shares by dataset and by domain."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from ui import charts, columns
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
model = st.selectbox("Model", models, format_func=visible, **seed_one("model", models, models[0])) if models else None
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
        st.info("No failures classified by this analyst match these filters.")
        continue
    if errors.is_empty():
        st.info(f"No failure of this model has an error type in any {by}; only labels that are "
                "not error types (below).")
    else:
        every = sorted(set(slices[by].filter(slices[by]["error_type"])["category"]))
        charts.show(charts.slice_heatmap(errors, by, every), f"slices-{model}-by-{by}", key=f"slices-{by}")
        st.caption(f"Cell text k/n = the model's failures of that error type in the {by} / its "
                   f"failures with an error type in the {by}; shade = that share, so 1/1 is as dark "
                   "as 5/5: read the n before the shade.")
        table = errors.select(by, "category", "count", "failures", "share", "questions", "per_100")
        show_table(columns.shown(table), name=f"slices-by-{by}", hide_index=True, column_config=columns.config(
            table.columns, failures=columns.count(f"Failures with an error type in the {by}"),
            share=columns.percent("Share of the model's errors")))
    if not apart.is_empty():
        table = apart.select(by, "category", "count", "labelled", "share")
        with st.expander(f"Not error types, by {by} (counted apart, never tested)"):
            show_table(columns.shown(table), name=f"slices-by-{by}-apart", hide_index=True, column_config=columns.config(
                table.columns, labelled=columns.count("Labelled failures"),
                share=columns.percent("Share of labelled failures")))
ui.share_link("/slices", {**f.params(), "analyst": analyst, "model": model})
