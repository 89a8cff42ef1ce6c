"""Faultline — the overview page: what is loaded, accuracy per model, analysis coverage."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import stats
import ui
from core.counts import ANALYSED, LABELLED, LOADED_FAILURES, PREDICTIONS, UNDER_THRESHOLD
from stats import fmt
from stats.leaderboard import leaderboards
from store import queries as q
from taxonomy.catalog import HARD
from ui import charts, columns, leaderboard
from ui.text import md, visible
from ui.tables import show_table

ui.configure_page("app.py", "Faultline — why do these models fail?")
ui.require_data()
f = ui.sidebar_filters()

# what is stored, every split: the split filter applies to the accuracy and analyses below
inv = ui.load(q.inventory, models=f.models, datasets=f.datasets, domains=f.domains)
opts = ui.load(q.filter_options)
cols = st.columns([1, 1, 1, 1, 1.6, 1.6])  # the two counts' names are longer: whole at 1280 px
# every count here says its rule (core/counts.py): the header's is every split as loaded, the
# analysis's below the main split under the analysis threshold (three right numbers read as one wrong one)
for col, (label, value, count) in zip(cols, [
        ("Runs", inv["runs"], None), ("Models", inv["models"], None), ("Datasets", inv["datasets"], None),
        ("Domains", inv["domains"], None), (PREDICTIONS.label, inv["predictions"], PREDICTIONS),
        (LOADED_FAILURES.label, inv["failures"], LOADED_FAILURES)]):
    col.metric(label, fmt.count(value), help=count and count.rule)
scope = "under these filters" if f.params() else "loaded"
st.caption(f"Counts {scope} (every split). Formats: {md(inv['formats'] or '—')}. "
           f"Infrastructure errors (kept apart from model failures): {fmt.count(inv['infra_errors'])}.")
if opts["domains"]:
    with st.expander(f"{len(opts['domains'])} domains in the store"):
        st.text(visible(", ".join(opts["domains"])))

st.subheader("Results per model")
acc = ui.load(stats.model_accuracy, **f.kwargs(), by="dataset")
if acc.is_empty():
    st.info("No scored predictions match these filters.")
else:
    acc = acc.sort(["dataset", "headline", "model"], descending=[False, True, False], nulls_last=True)
    ladders = {x.dataset: x for x in ui.load(leaderboards, **f.kwargs())}
    for (dataset,), group in acc.group_by("dataset", maintain_order=True):
        ladder = ladders.get(dataset)
        charts.show(charts.headline(group, dataset, leaderboard.groups(ladder)), f"results-{dataset}",
                    key=f"results-{dataset}")
        ui.results_caption(group)
        leaderboard.which_ranks_differ(ladder)
    table = columns.results_table(acc)
    show_table(table, name="results", hide_index=True, column_config=columns.config(table.columns))
    st.caption(
        "Per dataset (they differ in difficulty and scale), best first; latest run per model and "
        "question. **The harness's number** is its own headline in its own metric and scale, with "
        "its 95% interval. For a continuous metric, **failures under the analysis threshold** are "
        "the predictions picked for analysis (ErrorMap's device, 0.7 of the metric's range unless "
        "moved in the sidebar), not the harness's number; for a 0/1 metric the two are one number.")
    ui.sensitivity_strip(acc, f)
    unequal = stats.unequal_questions(acc)
    if unequal:
        # one note for every such dataset (eight yellow boxes, mostly one model's shot variants, shouted)
        st.info(f"Models answered different numbers of questions on {fmt.plural(len(unequal), 'dataset')}: "
                + "; ".join(md(line) for line in unequal) + ". Their numbers are over different question "
                "sets; the Compare page pairs the questions both answered.", icon=":material/rule:")
    leaderboard.adjacent_tests(list(ladders.values()))
    st.download_button(
        "Download a static report (HTML)", ui.report_html(f), file_name="faultline-report.html",
        mime="text/html", icon=":material/download:",
        help="One self-contained file with the charts, the pairwise comparisons and example "
             "failures; it opens in any browser without a network.")

st.subheader("Failure analysis")
found = ui.load(q.analysts, **f.kwargs())
if found.is_empty():
    ui.no_analyses(stop=False)
else:
    failed = int(acc["failures"].sum()) if not acc.is_empty() else 0
    top = found.row(0, named=True)
    st.markdown(f"**{fmt.count(top['analysed'])}** {ANALYSED.name} of {fmt.count(failed)} "
                f"{UNDER_THRESHOLD.name}, by **{md(top['analyst'])}**; {fmt.count(top['classified'])} "
                f"{LABELLED.name}.", help="; ".join(f"{c.label}: {c.rule}" for c in (UNDER_THRESHOLD, ANALYSED, LABELLED))
                + f". The header above counts {LOADED_FAILURES.name}.")
    ui.moved_threshold_note(f)
    show_table(found, name="analysts", hide_index=True, column_config=columns.config(found.columns))
    ui.offline_caveat(top["analyst"])
    sig = ui.load(stats.signature, analyst=top["analyst"], **f.kwargs())
    hard = int(sig.filter(sig["category"] == HARD)["count"].sum()) if not sig.is_empty() else 0
    labelled = int(sig["count"].sum()) if sig.height else 0
    if labelled and hard >= 0.5 * labelled:
        st.warning(
            f"{md(top['analyst'])} could only file {fmt.count(hard)} of {fmt.count(labelled)} {LABELLED.name} "
            "under **Hard to Analyze**: their outputs carry no visible cause (bare answers such as "
            "an option letter, or a wrong answer with no working). Logs with the models' reasoning "
            "(chain-of-thought runs), or an LLM analyst (python -m taxonomy analyze --analyst "
            "openai/gpt-4o-mini, which also sees the question, the references and other models' "
            "correct answers), would say more.", icon=":material/help:")

ui.share_link("/", f.params())
