"""The runs loaded: source file, format, main split, variant, settings, the harness-agreement
check, counts and when each was ingested."""

import streamlit as st

import ui
from store import queries as q
from stats import fmt
from ui import columns

ui.configure_page("pages/data.py", "Data loaded")
ui.require_data()
f = ui.sidebar_filters()
runs = ui.load(q.runs, models=f.models, datasets=f.datasets, domains=f.domains)
st.write(f"{fmt.plural(runs.height, 'run')}, {fmt.plural(int(runs['n_predictions'].sum()), 'prediction')}, "
         f"{fmt.plural(int(runs['n_failures'].sum()), 'failure')}, "
         f"{fmt.plural(int(runs['n_infra_errors'].sum()), 'infrastructure error')}.")
checked = runs.filter(runs["harness_agrees"].is_not_null())
differ = checked.filter(~checked["harness_agrees"])
if checked.height:
    st.write(f"Harness check: {checked.height - differ.height:,} of {fmt.plural(checked.height, 'run')} with their "
             f"own aggregate agree with Faultline's recomputed rate"
             + (f"; {differ.height:,} differ (see the harness check column)." if differ.height else "."))
shown = columns.words(runs, "harness_agrees")
st.dataframe(shown, hide_index=True, column_config=columns.config(
    shown.columns, harness_note=st.column_config.TextColumn("Harness check", width="large"),
    file=st.column_config.TextColumn("File", width="medium")))
where = "" if ui.read_only() else " or above" if ui.is_demo() else " or below"
st.caption("Model is the log's model name, plus “ · variant” when the model has several runs on a "
           "dataset that differ in settings (or come from different logs): each is its own model on "
           "every page. Pages count each run's main split unless the Split filter says otherwise. "
           "Add more with python -m ingest PATH" + where + "; re-ingesting a log replaces its run.")
if not ui.is_demo():  # the demo banner above already offers it
    ui.setup.loader()
ui.share_link("/data", f.params())
