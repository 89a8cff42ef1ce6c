"""Where each error type concentrates: category shares by dataset and by domain."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from ui import charts, columns
from ui.urlstate import seed_one, warn_unknown

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
model = st.selectbox("Model", models, **seed_one("model", models, models[0])) if models else None
for by, label in (("dataset", "By dataset"), ("domain", "By domain (e.g. MMLU subject)")):
    st.subheader(label)
    sl = slices[by].filter(slices[by]["model"] == model)
    if sl.is_empty():
        st.info("No failures classified by this analyst match these filters.")
        continue
    st.altair_chart(charts.slice_heatmap(sl, by, sorted(set(slices[by]["category"]))), width="stretch")
    st.caption(f"Number in a cell = the model's failures of that category in the {by}; colour = "
               f"their share of the model's classified failures in the {by}.")
    st.dataframe(sl, hide_index=True, column_config=columns.config(sl.columns))
ui.share_link("/slices", {**f.params(), "analyst": analyst, "model": model})
