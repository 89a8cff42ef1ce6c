"""The taxonomy: categories → error titles → questions, counts per model, versions, descriptions,
the analyst's calibration against people's labels (and the controls that draw failures to review,
load people's labels and calibrate), and how far its labels agree with people or another analyst."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

from pathlib import Path

import polars as pl
import streamlit as st

import ui
from store import queries as q
from ui import agreement, columns, review, suspects
from ui.text import md, visible_data
from ui.urlstate import warn_unknown
from ui.tables import show_table

ui.configure_page("pages/taxonomy.py", "Taxonomy")
ui.require_data()
f = ui.sidebar_filters()
analyst = ui.analyst_picker(f)

taxonomies = ui.load(q.taxonomies)
if not taxonomies:
    st.info("No taxonomy stored yet; `python -m taxonomy analyze` stores the one it classifies with.")
for tax in taxonomies:
    with st.expander(f"{md(tax['taxonomy_version'])} — {md(tax['name'])}", expanded=len(taxonomies) == 1):
        source = Path(tax["source"]).name if ui.read_only() else tax["source"]
        st.caption(f"Source: {md(source)}; stored {tax['created_at']:%Y-%m-%d %H:%M}.")
        cats = tax["categories"]
        if isinstance(cats, list) and all(isinstance(c, dict) for c in cats):
            show_table(cats, name=f"taxonomy-{tax['taxonomy_version']}", hide_index=True,
                       column_config={"name": "Category", "description": "Description"})
        else:
            st.json(visible_data(cats))

if analyst is None:
    ui.no_analyses()
ui.offline_caveat(analyst)
tree = ui.load(q.taxonomy_tree, analyst=analyst, **f.kwargs())
if tree.is_empty():
    st.info("No labelled failures of this analyst match these filters.")
    st.stop()

st.subheader("Categories")
by_category = columns.error_types_last(
    tree.pivot(on="model", index="category", values="count", aggregate_function="sum"))
st.caption("Labelled failures per category and model. Other, Hard to Analyze, No Model Error and "
           "Environment Failure are not error types: listed last, counted apart and never tested.")
show_table(by_category.fill_null(0), name="categories-by-model", hide_index=True, column_config={"category": "Category"})

categories = sorted(set(tree["category"]))
warn_unknown("category", "category", categories)
category = st.selectbox("Category", categories, index=None, key="category",
                        bind="query-params", placeholder="pick a category to see its error titles")
if category:
    titles = tree.filter(tree["category"] == category).pivot(
        on="model", index=["error_title", "taxonomy_version"], values="count",
        aggregate_function="sum").fill_null(0)
    links = [ui.page_url("instances", {**f.params(), "category": category, "outcome": "failed",
                                       "text": t, "analyst": analyst})
             for t in titles["error_title"]]
    st.subheader(f"Error titles filed under {md(category)}")
    show_table(titles.with_columns(open=pl.Series(links, dtype=pl.String)), name="error-titles", hide_index=True,
                 column_config=columns.config(titles.columns, taxonomy_version="Taxonomy version",
                                              open=st.column_config.LinkColumn("Failures", display_text="open")))
    st.page_link("pages/instances.py", label=f"Open the {md(category)} failures →", icon=":material/open_in_new:",
                 query_params={**f.params(), "category": category, "outcome": "failed",
                               "analyst": analyst})
agreement.calibration_panel(analyst)
with st.expander("Measure the analyst: propose failures to review, load people's labels, calibrate",
                 expanded=False):
    review.measure_controls(analyst, f)
against = agreement.panel(analyst, f)
suspects.panel(f, analyst)
ui.share_link("/taxonomy", {**f.params(), "analyst": analyst, "category": category, "against": against})
