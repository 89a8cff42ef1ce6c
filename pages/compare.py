"""Compare two models: per dataset, each model's own number and the paired test that fits its
metric (the page leads with these); one McNemar test over all datasets only where every dataset
is pass/fail; per-error-type differences; the questions only one model fails. Every "fails" says
its rule."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import math

import polars as pl
import streamlit as st

import stats
import ui
from stats import fmt
from stats.compare import label_noise_line, mix_sentences
from store import queries as q
from ui import agents, charts, columns, comparison, pairs
from ui.tables import show_table
from ui.text import md
from ui.urlstate import warn_unknown

PAGE_SIZE = 50

ui.configure_page("pages/compare.py", "Compare two models")
ui.require_data()
f = ui.sidebar_filters()
# the shared model filter narrows the choice of A and B when it names at least two models
models = f.models if len(f.models) >= 2 else ui.load(q.filter_options)["models"]
if len(models) < 2:
    st.info("Comparing needs at least two models; load another model's logs with "
            "python -m ingest PATH (or on the Data page).")
    st.stop()
for key in ("a", "b"):
    warn_unknown(key, f"model {key.upper()}", models)

# open on the two models that share the most questions under the filters, not the first two names
shared = ui.load(q.shared_questions, models=models if f.models else None, datasets=f.datasets,
                 domains=f.domains, split=f.split)
asked_a = st.query_params.get("a")
default_a, default_b = pairs.default_pair(shared, models, asked_a if asked_a in models else None)
left, right = st.columns(2)
a = left.selectbox("Model A", models, index=models.index(default_a), key="a", bind="query-params")
b_default = default_b if default_a == a else pairs.best_partner(shared, a, models)
# (no format_func here: a bound selectbox writes its formatted label into the URL)
b = right.selectbox("Model B", models, index=models.index(b_default), key="b", bind="query-params",
                    help="Opens on the model that shares the most questions with A.")
if a == b:
    st.warning("Model A and model B are the same model; pick two different ones.")
    st.stop()
pair = ui.Filters([a, b], f.datasets, f.domains, f.split, f.thresholds)
analyst = ui.analyst_picker(pair)
every = st.checkbox("Count every analysed failure (not only on questions both answered)", key="failures",
                    bind="query-params",
                    help="By default error types are compared on the questions both models answered, so "
                         "a difference cannot come from which datasets each ran. Ticked, every analysed "
                         "failure of each model counts, wherever it lies.")
ui.share_link("/compare", {"a": a, "b": b, **f.params(), "analyst": analyst,
                           "failures": "true" if every else None})
c = ui.load(stats.compare, a=a, b=b, datasets=f.datasets, domains=f.domains, analyst=analyst,
            split=f.split, thresholds=f.thresholds, unpaired=every, types_by_dataset=False)

acc = ui.load(stats.model_accuracy, **pair.kwargs(), by="dataset")
rules = comparison.fail_rules(c, acc)
top = st.columns(4)
top[0].metric("Questions both answered", fmt.count(c.n_pairs))
top[1].metric("Datasets both answered", fmt.count(len(c.by_dataset)))
if c.n_pairs == 0:
    st.markdown(md(stats.verdict(c), 2000))
    best = shared.row(0, named=True) if shared.height else None
    st.info("These two models answered no question in common under these filters, so there is "
            "nothing to compare question by question"
            + (f"; {md(best['a'])} and {md(best['b'])} share the most "
               f"({fmt.plural(best['shared'], 'question')})." if best else "; pick models or datasets they share."))
    st.stop()

comparison.per_dataset(c, acc, rules)
if comparison.pass_fail_only(c):
    # one test over every dataset compares like with like only when each is pass/fail; over one
    # dataset it is that dataset's test, read out in words below its row
    if len(c.by_dataset) > 1:
        st.subheader("Overall: cluster-robust paired t-test" if c.clustered else "Overall: paired McNemar exact test")
    m = st.columns(4)
    # the pickers above name A and B: a long model name here was cut at 1280 px; the whole on hover
    m[0].metric("Only A fails", fmt.count(c.a_only_fail), help=f"A: {md(a)}")
    m[1].metric("Only B fails", fmt.count(c.b_only_fail), help=f"B: {md(b)}")
    m[2].metric("p (two-sided)", fmt.p_value(c.p))
    st.markdown(md(stats.verdict(c), 2000))
    if len(c.by_dataset) > 1:
        st.caption(comparison.rules_caption(rules))
comparison.thresholded(c, rules)

st.subheader("Error types")
for line in mix_sentences(c):
    st.warning(md(line, 2000), icon=":material/call_split:")
if analyst is None:
    ui.no_analyses(stop=False, scope=f"of {md(a)} or {md(b)} under these filters")
elif c.a_labelled + c.b_labelled == 0:
    st.info(f"Analyst {md(analyst)} has analysed failures of these models, but none has a category "
            "yet; classification assigns them (python -m taxonomy analyze classifies what is "
            "analysed).")
else:
    ui.offline_caveat(analyst)
    if c.categories:
        where = ("every analysed failure of each model" if c.unpaired
                 else f"the {fmt.plural(c.n_pairs, 'question')} both answered")
        st.caption(
            f"Shares of the failures with an error type, on {where}: A has {fmt.count(c.a_total)} of "
            f"{fmt.count(c.a_labelled)} labelled failures, B {fmt.count(c.b_total)} of "
            f"{fmt.count(c.b_labelled)} (analyst {md(c.analyst)}). Δ = B's share − A's share with its "
            "Newcombe 95% interval, sorted by |Δ|. Colour and the Finding column give the same test: "
            "Fisher exact on the shares, Benjamini–Hochberg over the error types; significant = "
            "q ≤ 0.05. “Too few to tell” = no split of these counts could reach p ≤ 0.05.")
        st.caption(label_noise_line(c))
        st.caption(comparison.rules_caption(rules))
        shown = columns.compare_table(c)
        key = columns.compare_key(c)
        charts.show(charts.delta_chart(shown, a, b), f"compare-{a}-vs-{b}", key="delta")
        show_table(columns.shown(shown.select(key)), name="compare-error-types", hide_index=True,
                   column_config=columns.config(key))
        with st.expander("Paired test per error type, and the ErrorMap paper's check"):
            st.caption("Paired: on the questions only one model fails, how often that failure has "
                       "this error type (McNemar exact; 5 or fewer such questions cannot reach "
                       "p ≤ 0.05). The paper's check treats the stronger model's share as known "
                       "and overstates significance: shown for parity only.")
            paired_key = columns.compare_paired(c)
            show_table(shown.select(paired_key), name="compare-paired", hide_index=True,
                       column_config=columns.config(paired_key))
        comparison.error_types_per_dataset(c, pair, analyst)
    else:
        st.info("Neither model has a failure with an error type under these filters; the labels "
                "below are not error types, so there is nothing to test.")
    if c.not_error_types:
        st.markdown("**Not error types** (counted apart, never tested)")
        st.caption("Other = no category fits; Hard to Analyze = the output gives too little to name "
                   "a cause (e.g. a bare option letter); No Model Error = the analyst found the "
                   "failure is not the model's (e.g. a wrong or ambiguous reference). Shares are of "
                   "all the model's labelled failures; a difference here says how much the analyst "
                   "could tell, not how the models fail.")
        apart = c.not_error_frame()
        show_table(columns.shown(apart), name="compare-apart", hide_index=True, column_config=columns.config(
            apart.columns, a_share=columns.percent("A: share of labelled failures"),
            b_share=columns.percent("B: share of labelled failures"),
            a_count=columns.count("A: failures"), b_count=columns.count("B: failures")))

agent_runs = ui.load(stats.agent_compare, a=a, b=b, analyst=analyst, datasets=f.datasets, domains=f.domains,
                     split=f.split)
if agent_runs is not None:
    agents.compare_section(agent_runs)

st.subheader("Questions only one model fails")
st.caption(comparison.rules_caption(rules))
counts = {"only A fails": c.a_only_fail, "only B fails": c.b_only_fail}
tabs = dict(zip(counts, st.tabs([f"Only A fails ({fmt.count(c.a_only_fail)})",
                                 f"Only B fails ({fmt.count(c.b_only_fail)})"])))
pages = {}  # each side's page, its pager in its own tab
for which, total in counts.items():
    with tabs[which]:
        if total == 0:
            st.caption("None.")
            continue
        last = math.ceil(total / PAGE_SIZE)
        key = "page_a" if which == "only A fails" else "page_b"
        pages[which] = st.number_input(f"Page (of {last:,}, {PAGE_SIZE} questions each)", 1, last, 1,
                                       key=key) if last > 1 else 1
# both tabs' pages in one query: the pairing is most of its cost
shown = ui.load(q.discordant_pages, a=a, b=b, analyst=analyst, datasets=f.datasets, domains=f.domains,
                split=f.split, thresholds=f.thresholds, limit=PAGE_SIZE,
                offset_a=(pages.get("only A fails", 1) - 1) * PAGE_SIZE,
                offset_b=(pages.get("only B fails", 1) - 1) * PAGE_SIZE) if pages else None
for which, page in pages.items():
    with tabs[which]:
        rows = shown.filter(pl.col("which") == which)
        links = [ui.page_url("instances", {"instance": f"{d}:{i}", "models": [a, b], "analyst": analyst,
                                           **({"threshold": f.params()["threshold"]} if f.thresholds else {})})
                 for d, i in rows.select("dataset", "instance_id").iter_rows()]
        view = columns.discordant_table(rows, links)
        show_table(view, name=f"compare-{which.replace(' ', '-')}", hide_index=True,
                   column_config=columns.discordant_config(view.columns, a, b))
        st.caption(f"Questions {(page - 1) * PAGE_SIZE + 1:,}–{(page - 1) * PAGE_SIZE + rows.height:,} "
                   f"of {counts[which]:,}, by dataset and question id. For multiple choice, an output shows "
                   "the option letter and its text; open a question (Details) to read its texts whole.")
