"""Suspect items for benchmark creators (taxonomy page): failures that look like scoring or
reference problems rather than model errors. Every text is a dataframe cell."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats.suspects import by_dataset
from store import agreement as sa

from . import columns
from .data import load
from .filters import Filters
from .share import page_url
from .tables import show_table


def panel(f: Filters, analyst: str | None) -> None:
    st.subheader("Suspect items")
    frame = load(sa.suspect_items, analyst=analyst, **f.kwargs())
    failures = int(frame["failures"].sum()) if not frame.is_empty() else 0
    st.markdown(f"**{failures} failures look like scoring or reference problems**")
    st.caption("Failures the analyst found not to be the model's fault (No Model Error), and questions every model "
               "fails with the same answer: check their references and scoring before reading them as model errors.")
    if frame.is_empty():
        return
    per_dataset = by_dataset(frame)
    show_table(per_dataset, name="suspects-per-dataset", hide_index=True, column_config=columns.config(
        per_dataset.columns, questions="Suspect questions", failures="Failures"))
    links = [page_url("instances", {**f.params(), "analyst": analyst or "", "instance": f"{d}:{i}"})
             for d, i in frame.select("dataset", "instance_id").iter_rows()]
    shown = frame.with_columns(open=pl.Series(links, dtype=pl.String))
    show_table(shown, name="suspect-questions", hide_index=True, column_config=columns.config(
        shown.columns, failures="Failures", why=st.column_config.TextColumn("Why it is suspect", width="large"),
        answer=st.column_config.TextColumn("Shared answer", width="small"),
        models=st.column_config.TextColumn("Models", width="medium"),
        open=st.column_config.LinkColumn("Details", display_text="open")))
