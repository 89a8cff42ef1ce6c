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
    """One row per dataset both models answered, and a sensitivity strip per continuous one."""
    if not c.by_dataset:
        return
    st.subheader("Per dataset")
    own = {(r["model"], r["dataset"]): r for r in acc.iter_rows(named=True)}
    rows = []
    for d in c.by_dataset:
        ra, rb = own.get((c.a, d.dataset)), own.get((c.b, d.dataset))
        row = {"dataset": d.dataset, "n_pairs": d.n_pairs,
               "a_number": headline_text(ra) if ra else "–", "b_number": headline_text(rb) if rb else "–",
               "a_only_fail": d.a_only_fail, "b_only_fail": d.b_only_fail, "p_text": fmt.p_value(d.p),
               "difference": "–", "wilcoxon": "–"}
        if d.scores is not None:
            sc, span = d.scores, (d.scores.scale_min, d.scores.scale_max)
            row["difference"] = (f"{fmt.signed_score(sc.mean_difference, *span)} "
                                 f"({fmt.score_interval(sc.bootstrap_ci_low, sc.bootstrap_ci_high, *span, signed=True)})")
            row["wilcoxon"] = f"{fmt.p_value(sc.wilcoxon_p)} (n = {fmt.count(sc.wilcoxon_n)})"
        rows.append(row)
    frame = pl.DataFrame(rows)
    if not any(d.scores for d in c.by_dataset):
        frame = frame.drop("difference", "wilcoxon")
    st.dataframe(frame, hide_index=True, column_config=columns.config(
        frame.columns, n_pairs=columns.count("Questions both answered"),
        a_number=st.column_config.TextColumn("A: the harness's number", help=f"{c.a}, on every question it answered"),
        b_number=st.column_config.TextColumn("B: the harness's number", help=f"{c.b}, on every question it answered"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right",
                                           help="Exact McNemar test on the questions only one model fails"),
        difference=st.column_config.TextColumn(
            "Mean score B − A (95% bootstrap)", alignment="right",
            help=f"On the paired questions; a seeded paired bootstrap ({t.BOOTSTRAP_REPLICATES:,} resamples, "
                 f"seed {t.BOOTSTRAP_SEED}), percentile interval"),
        wilcoxon=st.column_config.TextColumn(
            "Wilcoxon p", alignment="right",
            help="Wilcoxon signed-rank test (two-sided) of the paired score differences; zero differences "
                 "are dropped, n counts those ranked")))
    st.caption("Each dataset apart: scales and difficulty differ. A's and B's numbers are each model's own "
               "result on every question it answered in the dataset; the tests are on the questions both "
               "answered. For a continuous metric, the difference of mean scores and the Wilcoxon test are "
               "on the scores themselves, not on the thresholded verdicts.")
    for d in c.by_dataset:
        if d.sensitivity:
            _strip(c, d)


def _strip(c, d) -> None:
    """The paired result if the analysis threshold sat at 0.5, 0.7 or 0.9 of the range."""
    sc = d.scores
    st.markdown(f"**{md(d.dataset)}: failures and the paired result at other thresholds** "
                f"({md(sc.metric)}, {fmt.span(sc.scale_min, sc.scale_max)})")
    in_use = c.thresholds.get(d.dataset)
    frame = pl.DataFrame([{
        "line": f"{'>' if sc.lower_is_better else '<'} {fmt.number(x.line)}"
                + (f" ({x.share:g} of range)" if x.share is not None else " (set for this view)"),
        "a_failures": x.a_failures, "b_failures": x.b_failures, "a_only_fail": x.a_only_fail,
        "b_only_fail": x.b_only_fail, "p_text": fmt.p_value(x.p),
    } for x in d.sensitivity])
    st.dataframe(frame, hide_index=True, column_config=columns.config(
        frame.columns, line=st.column_config.TextColumn("Failure when the score is"),
        a_failures=columns.count("A fails"), b_failures=columns.count("B fails"),
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=st.column_config.TextColumn("McNemar p", alignment="right")))
    if in_use is not None:
        st.caption(f"The line in use on this page: {fmt.number(in_use)} (set for this view).")


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
