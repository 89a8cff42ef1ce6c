"""The compare page's per-dataset view: each model's own number, the paired tests within each
dataset (McNemar; for a continuous metric the Wilcoxon signed-rank test and a seeded paired
bootstrap of the mean difference), the failures and paired result at 0.5, 0.7 and 0.9 of the
metric's range, and the error types per dataset. The numbers are `stats.compare`'s, the same
`python -m stats compare` prints."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats import fmt
from core import significance as t
from stats.headline import headline_text

from . import columns
from .data import load
from .tables import show_table
from .text import md


def per_dataset(c, acc: pl.DataFrame) -> None:
    """One row per dataset both models answered (each model's own number, McNemar); for the
    datasets on a continuous score, the tests on the scores and, folded, the sensitivity strip."""
    if not c.by_dataset:
        return
    st.subheader("Per dataset")
    own = {(r["model"], r["dataset"]): r for r in acc.iter_rows(named=True)}
    frame = pl.DataFrame([{
        "dataset": d.dataset, "n_pairs": d.n_pairs,
        "a_number": headline_text(own[(c.a, d.dataset)]) if (c.a, d.dataset) in own else "–",
        "b_number": headline_text(own[(c.b, d.dataset)]) if (c.b, d.dataset) in own else "–",
        "a_only_fail": d.a_only_fail, "b_only_fail": d.b_only_fail, "p_text": fmt.p_value(d.p),
        "mcnemar_q": fmt.p_value(d.q), "mde_text": fmt.pct(d.mde) if d.mde is not None else "–",
    } for d in c.by_dataset])
    show_table(frame, name="compare-by-dataset", hide_index=True, column_config=columns.config(
        frame.columns, n_pairs=columns.count("Both answered"),
        a_number=st.column_config.TextColumn("A's number", help=f"The harness's number for {c.a}, on every "
                                                                "question it answered in the dataset"),
        b_number=st.column_config.TextColumn("B's number", help=f"The harness's number for {c.b}, on every "
                                                                "question it answered in the dataset"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right",
                                           help="Exact McNemar test on the questions only one model fails"),
        mcnemar_q=st.column_config.TextColumn("q (BH)", alignment="right",
                                           help="McNemar p adjusted for testing every dataset of this "
                                                "comparison at once (Benjamini–Hochberg; one family: the "
                                                "datasets' McNemar tests)"),
        mde_text=st.column_config.TextColumn(
            "Detectable", alignment="right",
            help="The smallest difference in failure rate (a share of the questions both answered) the "
                 "exact McNemar test finds with 80% power at α = 0.05, given how often the two models "
                 "disagree here: where q > 0.05, no difference of this size or more was detected")))
    st.caption("q: Benjamini–Hochberg over the datasets' McNemar tests (one family). Detectable: what each "
               "test could have found with 80% power; a non-significant dataset detected no difference of "
               "that size or more.")
    scored = [d for d in c.by_dataset if d.scores is not None]
    if not scored:
        return
    st.markdown("**Scores, paired** (continuous metrics: on the scores themselves, not the thresholded verdicts)")
    frame = pl.DataFrame([{
        "dataset": d.dataset, "metric": f"{d.scores.metric} ({fmt.span(d.scores.scale_min, d.scores.scale_max)})",
        "n_pairs": d.scores.n, "means": f"{_score(d, d.scores.a_mean)} vs {_score(d, d.scores.b_mean)}",
        "difference": f"{fmt.signed_score(d.scores.mean_difference, *_span(d))} "
                      f"({fmt.score_interval(d.scores.bootstrap_ci_low, d.scores.bootstrap_ci_high, *_span(d), signed=True)})",
        "wilcoxon": f"{fmt.p_value(d.scores.wilcoxon_p)} (n = {fmt.count(d.scores.wilcoxon_n)})",
        "wilcoxon_q": fmt.p_value(d.scores.wilcoxon_q),
        "mde": _score(d, d.scores.mde) if d.scores.mde is not None else "–",
    } for d in scored])
    show_table(frame, name="compare-paired-scores", hide_index=True, column_config=columns.config(
        frame.columns, metric=st.column_config.TextColumn("Metric (scale)"),
        n_pairs=columns.count("Both scored"),
        means=st.column_config.TextColumn("Mean A vs B", alignment="right"),
        difference=st.column_config.TextColumn(
            "B − A (95% bootstrap)", alignment="right",
            help=f"Mean of B's score − A's on the paired questions; seeded paired bootstrap "
                 f"({t.BOOTSTRAP_REPLICATES:,} resamples, seed {t.BOOTSTRAP_SEED}), percentile interval"),
        wilcoxon=st.column_config.TextColumn(
            "Wilcoxon p", alignment="right",
            help="Wilcoxon signed-rank test (two-sided) of the paired score differences; zero differences "
                 "are dropped, n counts those ranked"),
        wilcoxon_q=st.column_config.TextColumn(
            "Wilcoxon q", alignment="right",
            help="Benjamini–Hochberg over the Wilcoxon tests of this comparison's continuous datasets"),
        mde=st.column_config.TextColumn(
            "Detectable", alignment="right",
            help="The smallest mean difference a paired t-test finds with 80% power at α = 0.05 given the "
                 "differences' spread (the Wilcoxon's efficiency is 0.86-0.95 of the t-test's)")))
    st.caption("Each dataset apart: scales and difficulty differ. A's and B's numbers are each model's own "
               "result on every question it answered; the tests are on the questions both answered.")
    for d in scored:
        with st.expander(f"{d.dataset}: failures and the paired result at 0.5, 0.7 and 0.9 of the range",
                         expanded=len(scored) == 1 or d.dataset in c.thresholds):
            _strip(d)


def _span(d) -> tuple[float, float]:
    return d.scores.scale_min, d.scores.scale_max


def _score(d, v) -> str:
    return fmt.score(v, *_span(d))


def _strip(d) -> None:
    """The paired result if the analysis threshold sat at 0.5, 0.7 or 0.9 of the range."""
    sc = d.scores
    frame = pl.DataFrame([{
        "line": f"{'>' if sc.lower_is_better else '<'} {fmt.number(x.line)}"
                + (f" ({x.share:g} of range)" if x.share is not None else " (set for this view)"),
        "a_failures": x.a_failures, "b_failures": x.b_failures, "a_only_fail": x.a_only_fail,
        "b_only_fail": x.b_only_fail, "p_text": fmt.p_value(x.p),
    } for x in d.sensitivity])
    # one table per dataset: the name keys its download button, so it names the dataset too
    show_table(frame, name=f"compare-sensitivity-{d.dataset}", hide_index=True, column_config=columns.config(
        frame.columns, line=st.column_config.TextColumn(f"Failure when {sc.metric} is"),
        a_failures=columns.count("A fails"), b_failures=columns.count("B fails"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right")))


def error_types_per_dataset(c, f, analyst: str | None) -> None:
    """The error-type tests within one dataset the user picks, on its paired questions — the
    same numbers as that dataset's entry of `python -m stats compare --json`'s `by_dataset`."""
    import stats

    if len(c.by_dataset) < 2 or analyst is None:
        return
    names = [d.dataset for d in c.by_dataset]
    with st.expander("Error types per dataset (questions both answered)"):
        picked = st.selectbox("Dataset", names, index=None, key="types_dataset",
                              placeholder="pick a dataset to test its error types alone")
        if picked is None:
            return
        one = load(stats.compare, a=c.a, b=c.b, datasets=[picked], domains=f.domains, analyst=analyst,
                   split=f.split, thresholds=f.thresholds)
        if not one.categories:
            st.caption("Neither model has a failure with an error type on this dataset's paired questions.")
            return
        st.caption(f"On the {fmt.plural(one.n_pairs, 'question')} of {md(picked)} both answered: A has "
                   f"{fmt.count(one.a_total)} failures with an error type, B {fmt.count(one.b_total)}. Fisher "
                   "exact on the shares; Benjamini–Hochberg over this dataset's error types.")
        table = columns.compare_table(one)
        show_table(columns.shown(table.select(columns.COMPARE_KEY)), name="compare-dataset-error-types", hide_index=True,
                     column_config=columns.config(columns.COMPARE_KEY))
