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
from .text import md, visible


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
        st.text(visible(f"{analyst} has no labelled failures to measure yet."))  # a model name: text, not Markdown
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


def shares_caption(sig: pl.DataFrame, analyst: str, f: Filters, by: str | None = None) -> None:
    """How a page's shares were made (stats/shares.py): corrected by how many people's reviews,
    or sampling error only, with the way to measure the analyst."""
    keys = ["model"] + ([by] if by else [])
    per_group = sig.group_by(keys).agg(pl.col("reviewed").first(), pl.col("unmeasured").first())
    reviews = int(per_group["reviewed"].sum()) if per_group.height else 0
    unmeasured = int(per_group["unmeasured"].sum()) if per_group.height else 0
    if bool(sig["corrected"].any()):
        text = (f"Shares corrected for the analyst's measured misclassification, from "
                f"{fmt.plural(reviews, 'people’s label')} of these failures (a latent-class model of the "
                "analyst's confusion; the 95% intervals carry the reviews' and the failures' sampling "
                "error: docs/stats.md). The denominator "
                "is every failure under the pass rule, No Model Error and Hard to Analyze included.")
        if unmeasured:
            text += (f" {fmt.plural(unmeasured, 'failure')} with a label no one reviewed: counted as the "
                     "analyst labelled them, the intervals spanning every way they could fall.")
        st.caption(":material/verified: " + text)
        return
    st.caption(":material/warning: Shares are the analyst's own labels, with Wilson 95% intervals "
               "(sampling error only): analyst accuracy not measured. Review 50 failures to measure it; "
               "the shares are then corrected for its misclassification. The denominator is every "
               "failure under the pass rule, No Model Error and Hard to Analyze included.")
    st.page_link("pages/taxonomy.py", label="Measure the analyst: draw failures to review on the Taxonomy page →",
                 icon=":material/fact_check:", query_params={**f.params(), "analyst": analyst})


def calibration_panel(analyst: str) -> None:
    """The analyst's stored calibration (taxonomy.calibration): κ with its interval, the share of
    its specific labels people found right, on all reviews and on the test half, whether it is
    stale; per-category precision and recall and the confusion matrix. Or: not measured."""
    from taxonomy import calibration as tc

    status = load(tc.status, analyst=analyst)
    cal = status["calibration"]
    st.subheader("Calibration: is this analyst right?")
    st.caption("Measured on every people's label of the analyst's failures, each weighted to all the failures "
               "of its label (so the figures are of all its failures, not of the reviewed ones); the pages' "
               "shares are corrected with it. The agreement section below counts reviewed failures unweighted.")
    if cal is None:
        held = status["reviews"]
        st.text(visible(f"{analyst}: accuracy not measured. "
                        + (f"{held} of its failures carry a people's label: calibrate (below) to measure it."
                           if held else "No people's label of its failures yet: draw failures to review below.")))
        return
    report = cal["report"]
    everything, test = report["all"], report["test"]

    def kappa(m: dict) -> str:
        return "undefined" if m.get("kappa") is None else f"{m['kappa']:.2f}"

    def kappa_ci(m: dict) -> str:
        ci = m.get("kappa_ci")
        return f"95% interval {ci[0]:.2f} to {ci[1]:.2f}" if ci else "no interval"

    c1, c2, c3, c4 = st.columns(4)
    c1.metric("People's labels", f"{everything['n']:,}", help="Failures of the analyst people labelled, "
              "when it was calibrated")
    c2.metric("Cohen's κ", kappa(everything), help=kappa_ci(everything) + " (bootstrap within strata)")
    c3.metric("Specific labels right", fmt.pct(everything.get("specific_precision")),
              help="Of its labels that name an error (not Hard to Analyze or Other), the share people "
                   "agreed with, weighted to all its failures")
    c4.metric("Test half: κ", kappa(test), help=f"{test['n']} reviews; {kappa_ci(test)}")
    test_text = (f"test half ({test['n']} reviews, a fixed half of the failures): κ {kappa(test)}, "
                 f"{kappa_ci(test)}, specific labels right {fmt.pct(test.get('specific_precision'))}"
                 if test["n"] else "no review in the test half")
    st.caption(md(
        f"{analyst} on {everything['n']} people's labels: κ {kappa(everything)} ({kappa_ci(everything)}), "
        f"agreement {fmt.pct(everything.get('agreement'))}, specific labels right "
        f"{fmt.pct(everything.get('specific_precision'))}; {test_text}. Abstains (Hard to Analyze, Other) "
        f"on {fmt.pct(report.get('abstention_rate'))} of its {report.get('failures', 0):,} failures. Measured "
        f"{cal['created_at']:%Y-%m-%d %H:%M} on taxonomy {cal['taxonomy_version']}, prompt {cal['prompt_version']}.", 2000))
    if status["stale"]:
        st.warning("Stale: " + md("; ".join(status["stale"]), 1000) + ". Calibrate again (below).",
                   icon=":material/update:")
    per = pl.DataFrame([{"category": c, **m} for c, m in everything["per_category"].items()])
    confusion = everything["confusion"]
    st.caption("Per category: precision (of the analyst's labels, the share people agreed with) and recall "
               "(of people's labels, the share the analyst gave), weighted to all its failures")
    show_table(columns.shown(per), name="calibration-per-category", hide_index=True,
               column_config=columns.config(per.columns, precision=columns.percent("Precision"),
                                            recall=columns.percent("Recall")))
    st.caption("Confusion of the reviewed failures (rows: people's label, columns: the analyst's)")
    show_table(pl.DataFrame({"people": confusion["labels"],
                             **{c: [row[j] for row in confusion["matrix"]] for j, c in enumerate(confusion["labels"])}}),
               name="calibration-confusion", hide_index=True, column_config={"people": "People's label"})
