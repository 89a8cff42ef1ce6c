"""Compare two models: paired McNemar overall, per-category differences, discordant questions."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import json
import math

import polars as pl
import streamlit as st

import stats
import ui
from store import queries as q
from ui import charts, columns
from ui.text import cell, md
from ui.urlstate import warn_unknown

PAGE_SIZE = 50

ui.configure_page("pages/compare.py", "Compare two models")
ui.require_data()
f = ui.sidebar_filters()
# the shared model filter narrows the choice of A and B when it names at least two models
models = f.models if len(f.models) >= 2 else ui.load(q.filter_options)["models"]
if len(models) < 2:
    st.info("Comparing needs at least two models; load another model's logs with `python -m ingest PATH`.")
    st.stop()
for key in ("a", "b"):
    warn_unknown(key, f"model {key.upper()}", models)

left, right = st.columns(2)
a = left.selectbox("Model A", models, index=0, key="a", bind="query-params")
b = right.selectbox("Model B", models, index=next(i for i, m in enumerate(models) if m != a),
                    key="b", bind="query-params")
analyst = ui.analyst_picker(ui.Filters([a, b], f.datasets, f.domains, f.split))
ui.share_link("/compare", {"a": a, "b": b, **f.params(), "analyst": analyst})
c = ui.load(stats.compare, a=a, b=b, datasets=f.datasets, domains=f.domains, analyst=analyst,
            split=f.split)

st.subheader("Overall: paired McNemar exact test")
m = st.columns(4)
m[0].metric("Questions both answered", f"{c.n_pairs:,}")
m[1].metric(f"Only A fails ({md(a, 80)})", f"{c.a_only_fail:,}")
m[2].metric(f"Only B fails ({md(b, 80)})", f"{c.b_only_fail:,}")
m[3].metric("p (two-sided)", columns.p_value(c.p))
st.markdown(md(stats.verdict(c), 2000))
if c.n_pairs == 0:
    st.info("These two models answered no question in common under these filters, so there is "
            "nothing to compare question by question; pick models or datasets they share.")
    st.stop()

st.subheader("Failure categories")
if not c.categories:
    st.info("No classified failures for these two models yet.")
    ui.no_analyses(stop=False)
else:
    table = c.categories_frame()
    st.caption(f"Shares of classified failures: A has {c.a_total:,}, B has {c.b_total:,} "
               f"(analyst {md(c.analyst)}). Δ = B's share − A's share, Newcombe 95% interval; "
               "sorted by |Δ|.")
    st.altair_chart(charts.delta_chart(table, a, b), width="stretch")
    small = table.filter(~table["fisher_can_decide"])["category"].to_list()
    if small:
        st.caption("Too few failures to tell shares apart (no split of these counts could reach "
                   "p ≤ 0.05 in p_fisher): " + ", ".join(md(s) for s in small))
    small_paired = table.filter(~table["paired_can_decide"])["category"].to_list()
    if small_paired:
        st.caption("Too few paired discordant failures for p_paired to reach p ≤ 0.05 "
                   "(5 or fewer): " + ", ".join(md(s) for s in small_paired))
    shown = table.select("category", "a_count", "b_count", "a_share", "b_share", "p_fisher", "q_bh",
                         "a_only_fail", "b_only_fail", "p_paired", "p_errormap")
    st.dataframe(shown, hide_index=True, column_config=columns.config(shown.columns))


def _references(refs) -> str:
    items = json.loads(refs) if isinstance(refs, str) else refs
    items = items if isinstance(items, list) else []
    return "; ".join(str(r.get("text", "")) for r in items if isinstance(r, dict) and r.get("correct"))


st.subheader("Questions only one model fails")
counts = {"only A fails": c.a_only_fail, "only B fails": c.b_only_fail}
tabs = st.tabs([f"Only A fails ({c.a_only_fail:,})", f"Only B fails ({c.b_only_fail:,})"])
for tab, (which, total) in zip(tabs, counts.items()):
    with tab:
        if total == 0:
            st.caption("None.")
            continue
        pages = math.ceil(total / PAGE_SIZE)
        key = "page_a" if which == "only A fails" else "page_b"
        page = st.number_input(f"Page (of {pages}, {PAGE_SIZE} questions each)", 1, pages, 1,
                               key=key) if pages > 1 else 1
        rows = ui.load(q.discordant, a=a, b=b, analyst=analyst, datasets=f.datasets,
                       domains=f.domains, split=f.split, which=which, limit=PAGE_SIZE,
                       offset=(page - 1) * PAGE_SIZE)
        links = [ui.page_url("instances", {"instance": f"{d}:{i}", "models": [a, b], "analyst": analyst})
                 for d, i in rows.select("dataset", "instance_id").iter_rows()]
        # the reference sits beside the two outputs; the long question text comes after them
        # B's own id only when some question was paired by its text under another id
        ids = ["instance_id"] + (["b_instance_id"] if (rows["b_instance_id"] != rows["instance_id"]).any() else [])
        # plain Python on the collected rows: a Python callback in polars' thread pool
        # (map_elements) deadlocked the server under concurrent sessions (docs/reliability.md)
        texts = {"reference": [None if r is None else _references(r) for r in rows["refs"].to_list()],
                 **{c: [None if t is None else cell(t) for t in rows[c].to_list()]
                    for c in ("a_output", "b_output", "input_text")}}
        view = rows.with_columns(pl.Series(c, v, dtype=pl.String) for c, v in texts.items()).select(
            *ids, "reference", "a_output", "b_output", "category", "error_title", "input_text", "dataset", "domain",
        ).with_columns(open=pl.Series(links, dtype=pl.String))
        wide = {c: st.column_config.TextColumn(columns.LABELS[c], width="medium")
                for c in ("reference", "input_text", "error_title")}
        st.dataframe(view, hide_index=True, column_config=columns.config(
            view.columns, **wide,
            a_output=st.column_config.TextColumn(f"A: {a}", width="medium"),
            b_output=st.column_config.TextColumn(f"B: {b}", width="medium"),
            open=st.column_config.LinkColumn("Details", display_text="open")))
        st.caption(f"Questions {(page - 1) * PAGE_SIZE + 1:,}–{(page - 1) * PAGE_SIZE + rows.height:,} "
                   f"of {total:,}, by dataset and question id.")
