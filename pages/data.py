"""The runs loaded: source file, format, main split, variant, settings, the harness-agreement
check, counts and when each was ingested."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import ui
from store import queries as q
from ui import columns

ui.configure_page("pages/data.py", "Data loaded")
ui.require_data()
f = ui.sidebar_filters()
runs = ui.load(q.runs, models=f.models, datasets=f.datasets, domains=f.domains)
st.write(f"{runs.height} runs, {int(runs['n_predictions'].sum()):,} predictions, "
         f"{int(runs['n_failures'].sum()):,} failures, "
         f"{int(runs['n_infra_errors'].sum()):,} infrastructure errors.")
checked = runs.filter(runs["harness_agrees"].is_not_null())
differ = checked.filter(~checked["harness_agrees"])
if checked.height:
    st.write(f"Harness check: {checked.height - differ.height} of {checked.height} runs with their "
             f"own aggregate agree with Faultline's recomputed rate"
             + (f"; {differ.height} differ (see the harness note)." if differ.height else "."))
st.dataframe(runs, hide_index=True, column_config=columns.config(runs.columns))
where = "" if ui.read_only() else " or above" if ui.is_demo() else " or below"
st.caption("Model is the log's model name, plus ` · variant` when the model has several runs on a "
           "dataset that differ in settings (or come from different logs): each is its own model on "
           "every page. Pages count each run's main split unless the Split filter says otherwise. "
           "Add more with `python -m ingest PATH`" + where + "; re-ingesting a log replaces its run.")
if not ui.is_demo():  # the demo banner above already offers it
    ui.setup.loader()
ui.share_link("/data", f.params())
