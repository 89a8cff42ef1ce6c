"""The compare page's per-dataset view: each model's own number, the paired tests within each
dataset (McNemar; for a continuous metric the Wilcoxon signed-rank test and a seeded paired
bootstrap of the mean difference), the failures and paired result at 0.5, 0.7 and 0.9 of the
metric's range, and the error types per dataset. The numbers are `stats.compare`'s, the same
`python -m stats compare` prints."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats import fmt
from stats import tests as t
from stats.headline import headline_text

from . import columns
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
    } for d in c.by_dataset])
    st.dataframe(frame, hide_index=True, column_config=columns.config(
        frame.columns, n_pairs=columns.count("Both answered"),
        a_number=st.column_config.TextColumn("A's number", help=f"The harness's number for {c.a}, on every "
                                                                "question it answered in the dataset"),
        b_number=st.column_config.TextColumn("B's number", help=f"The harness's number for {c.b}, on every "
                                                                "question it answered in the dataset"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right",
                                           help="Exact McNemar test on the questions only one model fails")))
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
    } for d in scored])
    st.dataframe(frame, hide_index=True, column_config=columns.config(
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
                 "are dropped, n counts those ranked")))
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
    st.dataframe(frame, hide_index=True, column_config=columns.config(
        frame.columns, line=st.column_config.TextColumn(f"Failure when {sc.metric} is"),
        a_failures=columns.count("A fails"), b_failures=columns.count("B fails"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right")))


def error_types_per_dataset(c) -> None:
    """The error-type tests within each dataset, on its paired questions."""
    parts = [d for d in c.by_dataset if d.categories]
    if len(c.by_dataset) < 2 or not parts:
        return
    with st.expander("Error types per dataset (questions both answered)"):
        st.caption("Fisher exact on the shares within each dataset; Benjamini–Hochberg over the error types "
                   "of that dataset.")
        rows = [{"dataset": d.dataset, "category": r.category, "finding": r.finding, "a_count": r.a_count,
                 "b_count": r.b_count, "a_share": r.a_share, "b_share": r.b_share,
                 "q_text": fmt.p_value(r.q_bh), "p_fisher_text": fmt.p_value(r.p_fisher)}
                for d in parts for r in d.categories]
        frame = pl.DataFrame(rows, schema_overrides={"a_share": pl.Float64, "b_share": pl.Float64})
        st.dataframe(columns.shown(frame), hide_index=True, column_config=columns.config(frame.columns))
