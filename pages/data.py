"""The runs loaded: source file, format, main split, variant, reruns, settings, the
harness-agreement check, counts, when each was made and ingested."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import ui
from core.counts import LOADED_FAILURES, PREDICTIONS
from store import queries as q
from stats import fmt
from ui import columns
from ui.tables import show_table

ui.configure_page("pages/data.py", "Data loaded")
ui.require_data()
f = ui.sidebar_filters()
runs = ui.load(q.runs, models=f.models, datasets=f.datasets, domains=f.domains)
st.markdown(f"{fmt.plural(runs.height, 'run')}, {fmt.count(int(runs['n_predictions'].sum()))} {PREDICTIONS.name}, "
            f"{fmt.count(int(runs['n_failures'].sum()))} {LOADED_FAILURES.name}, "
            f"{fmt.plural(int(runs['n_infra_errors'].sum()), 'infrastructure error')}.",
            help=f"{PREDICTIONS.label}: {PREDICTIONS.rule}. {LOADED_FAILURES.label}: {LOADED_FAILURES.rule}.")
checked = runs.filter(runs["harness_agrees"].is_not_null())
differ = checked.filter(~checked["harness_agrees"])
if checked.height:
    st.write(f"Harness check: {checked.height - differ.height:,} of {fmt.plural(checked.height, 'run')} with their "
             f"own headline agree with Faultline's number recomputed from the scores"
             + (f"; {differ.height:,} differ (see the harness check column)." if differ.height else "."))
off_headline = runs.filter(runs["headline_metric"].is_not_null() & (runs["main_metric"] != runs["headline_metric"]))
if off_headline.height:
    st.warning(f"{fmt.plural(off_headline.height, 'run')} judged on another metric than the harness's headline: "
               "they count as differing (the harness check column names both metrics).")
earlier = runs.filter(runs["superseded_by"].is_not_null())
if earlier.height:
    st.info(f"{fmt.plural(earlier.height, 'earlier rerun')} collapsed: runs of a model on questions a later run of it "
            "answered again (same dataset, part and settings) are trials of one model, and the latest counts on every "
            "page (by the logs' own times, else by when they were ingested). The earlier ones stay listed here "
            "(Rerun column) and count only for questions the latest did not ask.")
not_compared = runs.filter(runs["harness_agrees"].is_null() & runs["harness_note"].is_not_null())
if not_compared.height:
    st.caption(f"{fmt.plural(not_compared.height, 'run')} could not be compared with the harness's own number; "
               "the harness check column says why.")
# an empty text cell (no domain, no variant) reads as a dash, not as Python's None
shown = columns.runs_table(runs)
show_table(shown, name="runs", hide_index=True, column_config=columns.config(
    shown.columns, harness_note=st.column_config.TextColumn("Harness check", width="large"),
    rerun=st.column_config.TextColumn("Rerun", width="medium"),
    domain=st.column_config.TextColumn("Domain", width="medium"),
    file=st.column_config.TextColumn("File", width="medium")))
impossible = ui.load(q.impossible_rates, models=f.models, datasets=f.datasets, domains=f.domains)
if impossible.height:
    st.warning("For these models and datasets 0% or 100% of predictions fail although the scores vary: "
               "check the pass/fail rule; if it is wrong for these scores, re-ingest with "
               "--scale DATASET=LOW:HIGH or --pass-threshold DATASET=X — or, to see which predictions "
               "another line would pick for analysis without re-ingesting, move the analysis threshold "
               "in the sidebar (the harness's own number does not depend on it).")
    show_table(impossible, name="impossible-rates", hide_index=True, column_config=columns.config(impossible.columns))
where = "" if ui.read_only() else " or above" if ui.is_demo() else " or below"
st.caption("Failures are counted by the pass rule each run was ingested with (its Pass/fail rule column); "
           "a threshold moved in the sidebar re-judges the other pages, not this table. "
           "Model is the log's model name, plus “ · variant” when its runs on a dataset differ in a setting "
           "that changes what it was asked (shots, chain of thought, prompt template, filter): each is its own "
           "model on every page. Reruns and dataset parts (subjects, language pairs) are not variants. Pages "
           "count each run's main split unless the Split filter says otherwise. "
           "Add more with python -m ingest PATH" + where + "; re-ingesting a log replaces its run.")
if not ui.is_demo():  # the demo banner above already offers it
    ui.setup.loader()
ui.share_link("/data", f.params())
