"""How far to trust an analyst: its agreement with reviews or another analyst (taxonomy page),
and the queue of labels to review next (instances page). Every text is a dataframe cell."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats import fmt
from store import agreement as sa
from taxonomy import agreement as ta

from . import columns
from .data import load
from .filters import Filters
from .share import page_url
from .tables import show_table
from .text import visible


def _instance_links(frame: pl.DataFrame, f: Filters, analyst: str) -> pl.DataFrame:
    links = [page_url("instances", {**f.params(), "analyst": analyst, "instance": f"{d}:{i}"})
             for d, i in frame.select("dataset", "instance_id").iter_rows()]
    return frame.with_columns(open=pl.Series(links, dtype=pl.String))


def _config(frame: pl.DataFrame, **overrides) -> dict:
    """Readable headers, and the `open` column as a link to the question."""
    return columns.config(frame.columns, open=st.column_config.LinkColumn("Details", display_text="open"),
                          **overrides)


def panel(analyst: str, f: Filters) -> str:
    """The agreement report of `analyst` against reviews or another analyst; returns the choice."""
    st.subheader("How far to trust these labels")
    names = [n for n, _ in load(sa.analyst_names)]
    if analyst not in names:
        st.text(visible(f"{analyst} has no classified failures to measure yet."))  # a model name: text, not Markdown
        return "reviews"
    choices = ["reviews"] + [n for n in names if n != analyst]
    against = st.selectbox("Compare with", choices, key="against", bind="query-params",
                           format_func=lambda c: "human reviews" if c == "reviews" else f"analyst {c}")
    report = load(ta.compare, analyst=analyst, against=against or "reviews", models=f.models, datasets=f.datasets)
    if not report.n:
        st.info("No failure is labelled by both sides yet. Review labels on the instances page — its review "
                "queue proposes a sample across categories and models — or compare with another analyst.")
        return against
    c1, c2, c3 = st.columns(3)
    c1.metric("Failures labelled by both", f"{report.n:,}")
    c2.metric("Raw agreement", fmt.pct(report.agreement))
    if report.kappa is None:
        c3.metric("Cohen's κ", "undefined")
        st.caption(f"κ is undefined: {report.kappa_note}.")
    else:
        ci = f"95% CI {report.kappa_ci[0]:.2f} to {report.kappa_ci[1]:.2f}" if report.kappa_ci else "no interval (n < 2)"
        c3.metric("Cohen's κ", f"{report.kappa:.2f}", help=f"{ci}; percentile bootstrap over the labelled failures")
        st.caption(f"κ {report.kappa:.2f}, {ci} (bootstrap, {ta.BOOTSTRAP_RESAMPLES} resamples). "
                   "For reference, the LLM-as-a-qualitative-judge study found 57% agreement between people.")
    per = pl.DataFrame([{"category": c, **m} for c, m in report.per_category.items()])
    left, right = st.columns(2)
    left.caption("Per category: precision and recall of the analyst against the reference")
    show_table(columns.shown(per), name="agreement-per-category", where=left, hide_index=True, column_config=_config(
        per, precision=columns.percent("Precision"), recall=columns.percent("Recall")))
    right.caption("Confusion (rows: reference, columns: analyst)")
    show_table(pl.DataFrame({"reference": report.labels,
                                  **{c: [row[j] for row in report.matrix] for j, c in enumerate(report.labels)}}),
                    name="agreement-confusion", where=right, hide_index=True, column_config={"reference": "Reference category"})
    if report.disagreements:
        st.caption(f"{len(report.disagreements)} disagreements")
        frame = pl.DataFrame([{"dataset": p.dataset, "instance_id": p.instance_id, "model": p.model,
                               "analyst": p.analyst, "reference": p.reference} for p in report.disagreements])
        show_table(_instance_links(frame, f, analyst), name="agreement-disagreements", hide_index=True, column_config=_config(
            frame, analyst="Analyst's category", reference="Reference category"))
    return against


def review_queue(analyst: str, f: Filters) -> None:
    """A stratified sample of unreviewed labels, per category and model, to review next."""
    with st.expander("Review queue: labels to review next"):
        per = st.slider("Labels per category and model", 1, 5, 2, key="per_stratum")
        queue = load(sa.review_queue, analyst=analyst, per_stratum=per, **f.kwargs())
        if queue.is_empty():
            st.text(visible(f"Every classified failure of {analyst} has a review."))
            return
        st.caption(f"{queue.height} unreviewed labels, up to {per} per (category, model): a few dozen reviews "
                   "spread like this give a usable κ on the taxonomy page.")
        show_table(_instance_links(queue, f, analyst), name="review-queue", hide_index=True, column_config=_config(queue))


def shared_wrong_answers(f: Filters, analyst: str | None) -> None:
    """Multiple-choice questions where several models chose the same wrong option."""
    with st.expander("Shared wrong answers (multiple choice)"):
        frame = load(sa.shared_wrong_answers, **f.kwargs())
        if frame.is_empty():
            st.caption("No two models chose the same wrong option on any question.")
            return
        st.caption(f"{frame.height} questions where models chose the same distractor")
        show_table(_instance_links(frame, f, analyst or ""), name="shared-wrong-answers", hide_index=True, column_config=_config(
            frame, wrong_answer=st.column_config.TextColumn("Wrong answer chosen", width="medium"),
            chosen_by=st.column_config.TextColumn("Chosen by", width="large")))
