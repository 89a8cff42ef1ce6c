"""The compare page's per-dataset view, which the page leads with: each model's own number and
the paired test that fits the dataset's metric — McNemar on the harness's verdicts for a pass/fail
dataset; the Wilcoxon signed-rank test and a seeded paired bootstrap of the mean difference for a
continuous score — each dataset once. Apart, for the continuous datasets, the failures under the
analysis threshold (the ones the error types and the discordant questions count) with their
McNemar test and the result at 0.5, 0.7 and 0.9 of the metric's range; and the error types per
dataset. Every "fails" says its rule. The numbers are `stats.compare`'s, the same
`python -m stats compare` prints."""

from __future__ import annotations

import re

import polars as pl
import streamlit as st

from core import significance as t
from stats import fmt
from stats.headline import headline_text

from . import columns
from .data import load
from .tables import show_table
from .text import md

# " — ErrorMap's 0.7 of the range": where an analysis rule's line comes from (stats.fmt.failure_rule)
_ORIGIN = re.compile(r" — [^;]*")


def fail_rules(c, acc: pl.DataFrame) -> dict[str, str]:
    """Per dataset of the comparison, what "fails" means there, in the Overview's words
    (`stats.headline`'s analysis rule: "score < 3.8 of 1–5 — ErrorMap's 0.7 of the range",
    "exact_match = 0 (pass = correct)", "the log's own verdicts"); each model's when they differ."""
    own = {(r["model"], r["dataset"]): r["analysis_rule"] for r in acc.iter_rows(named=True)}
    out = {}
    for d in c.by_dataset:
        said = {who: own[(model, d.dataset)].removeprefix("failures: ")
                for who, model in (("A", c.a), ("B", c.b)) if own.get((model, d.dataset))}
        texts = list(dict.fromkeys(said.values()))
        if texts:
            out[d.dataset] = texts[0] if len(texts) == 1 else "; ".join(f"{who}: {t}" for who, t in said.items())
    return out


def rules_caption(rules: dict[str, str], datasets=None) -> str:
    """What "fails" means for these datasets (all by default), those sharing a rule named together:
    "“Fails” means — aci_bench, med_dialog: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range;
    mmlu: exact_match = 0 (pass = correct)."."""
    by_rule: dict[str, list[str]] = {}
    for dataset, rule in rules.items():
        if datasets is None or dataset in datasets:
            by_rule.setdefault(rule, []).append(dataset)
    if not by_rule:
        return ""
    parts = "; ".join(f"{', '.join(md(d, 80) for d in names)}: {md(rule, 400)}" for rule, names in by_rule.items())
    return f"“Fails” means — {parts}."


def pass_fail_only(c) -> bool:
    """Whether every dataset of the comparison is judged pass/fail as its log or metric says (no
    continuous score under an analysis threshold): only then does one McNemar test over all of
    them compare like with like."""
    return bool(c.by_dataset) and all(d.scores is None for d in c.by_dataset)


def per_dataset(c, acc: pl.DataFrame, rules: dict[str, str]) -> None:
    """The page's lead: per dataset both models answered, each model's own number and the paired
    test that fits its metric, each dataset once."""
    if not c.by_dataset:
        return
    own = {(r["model"], r["dataset"]): r for r in acc.iter_rows(named=True)}

    def number(model: str, dataset: str) -> str:
        return headline_text(own[(model, dataset)]) if (model, dataset) in own else "–"

    binary = [d for d in c.by_dataset if d.scores is None]
    scored = [d for d in c.by_dataset if d.scores is not None]
    numbers = dict(
        a_number=st.column_config.TextColumn("A's number", help=f"The harness's number for {md(c.a)}, on every "
                                                                "question it answered in the dataset"),
        b_number=st.column_config.TextColumn("B's number", help=f"The harness's number for {md(c.b)}, on every "
                                                                "question it answered in the dataset"))
    if binary:
        clustered = any(d.clustered for d in binary)
        st.subheader("Per dataset, pass/fail: McNemar exact test"
                     + (", cluster-robust where questions are clustered" if clustered else ""))
        frame = pl.DataFrame([{
            "dataset": d.dataset, "n_pairs": d.n_pairs,
            "a_number": number(c.a, d.dataset), "b_number": number(c.b, d.dataset),
            "a_only_fail": d.a_only_fail, "b_only_fail": d.b_only_fail, "p_text": fmt.p_value(d.p),
            "mcnemar_q": fmt.p_value(d.q), "mde_text": fmt.pct(d.mde) if d.mde is not None else "–",
            **({"test": _test(d)} if clustered else {}),
        } for d in binary])
        show_table(frame, name="compare-by-dataset", hide_index=True, column_config=columns.config(
            frame.columns, n_pairs=columns.count("Both answered"), **numbers, **_TEST_COLUMN,
            a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
            p_text=_p_column(clustered),
            mcnemar_q=st.column_config.TextColumn(
                "q (BH)", alignment="right",
                help="p adjusted for testing every dataset of this comparison at once (Benjamini–Hochberg; "
                     "one family: each dataset's paired test of the failures, the scored datasets' on their "
                     "thresholded failures included)"),
            mde_text=st.column_config.TextColumn(
                "Detectable", alignment="right",
                help="The smallest difference in failure rate (a share of the questions both answered) the "
                     "exact McNemar test finds with 80% power at α = 0.05, given how often the two models "
                     "disagree here: where q > 0.05, no difference of this size or more was detected")))
        st.caption(rules_caption(rules, {d.dataset for d in binary}) + " q: Benjamini–Hochberg over the "
                   "datasets' paired tests of the failures (one family). Detectable: what each test could have found with 80% "
                   "power; a non-significant dataset detected no difference of that size or more.")
    if scored:
        any_clustered = any(x.scores.clustered for x in scored)
        st.subheader("Per dataset, scores: Wilcoxon signed-rank test and paired bootstrap"
                     + (" (cluster-robust t where questions are clustered)" if any_clustered else ""))
        frame = pl.DataFrame([{
            "dataset": d.dataset, "n_pairs": d.scores.n,
            "a_number": number(c.a, d.dataset), "b_number": number(c.b, d.dataset),
            "difference": _score_difference(d),
            **({"test": _score_test(d)} if any_clustered else {}),
            "wilcoxon": (f"{fmt.p_value(d.scores.wilcoxon_p)} (n = {fmt.count(d.scores.wilcoxon_n)})"
                         if d.scores.clustered is None else fmt.p_value(d.scores.p)),
            "wilcoxon_q": fmt.p_value(d.scores.q),
            "mde": _score(d, _score_mde(d)) if _score_mde(d) is not None else "–",
        } for d in scored])
        show_table(frame, name="compare-paired-scores", hide_index=True, column_config=columns.config(
            frame.columns, n_pairs=columns.count("Both scored"), **numbers,
            test=st.column_config.TextColumn(
                "Test", help="Wilcoxon signed-rank with a paired bootstrap interval, or where the questions are "
                             "clustered (one passage, a task's trials) the cluster-robust paired t (CR1, t on "
                             "clusters − 1 df) with its interval: the Wilcoxon and the bootstrap take the "
                             "questions as independent"),
            difference=st.column_config.TextColumn(
                "B − A (95%)" if any_clustered else "B − A (95% bootstrap)", alignment="right",
                help=f"Mean of B's score − A's on the questions both scored; seeded paired bootstrap "
                     f"({t.BOOTSTRAP_REPLICATES:,} resamples, seed {t.BOOTSTRAP_SEED}), percentile interval"
                     + ("; the cluster-robust t interval where the questions are clustered" if any_clustered else "")),
            wilcoxon=st.column_config.TextColumn(
                "p" if any_clustered else "Wilcoxon p", alignment="right",
                help="Wilcoxon signed-rank test (two-sided) of the paired score differences; zero differences "
                     "are dropped, n counts those ranked" + ("; the clustered t's p where the Test column says "
                                                             "so" if any_clustered else "")),
            wilcoxon_q=st.column_config.TextColumn(
                "q (BH)", alignment="right",
                help="p adjusted for testing every scored dataset of this comparison at once "
                     "(Benjamini–Hochberg; one family: the scored datasets' tests)"),
            mde=st.column_config.TextColumn(
                "Detectable", alignment="right",
                help="The smallest mean difference a paired t-test finds with 80% power at α = 0.05 given the "
                     "differences' spread (the Wilcoxon's efficiency is 0.86-0.95 of the t-test's; the "
                     "clustered t's own where the questions are clustered)")))
        metrics = "; ".join(f"{md(d.dataset, 80)}: {md(d.scores.metric, 80)} "
                            f"({fmt.span(d.scores.scale_min, d.scores.scale_max)}"
                            f"{', lower is better' if d.scores.lower_is_better else ''})" for d in scored)
        st.caption(f"On the scores themselves, not on pass/fail — {metrics}. Each dataset apart: scales and "
                   "difficulty differ. A's and B's numbers are each model's own result on every question it "
                   "answered; the tests are on the questions both scored.")


def thresholded(c, rules: dict[str, str]) -> None:
    """For the continuous datasets, the failures under the analysis threshold — what the error
    types and the questions only one model fails count — with their McNemar test and, folded, the
    result at 0.5, 0.7 and 0.9 of the range."""
    scored = [d for d in c.by_dataset if d.scores is not None]
    if not scored:
        return
    st.subheader("Scored datasets: failures under the analysis threshold")
    clustered = any(d.clustered for d in scored)
    frame = pl.DataFrame([{
        # where the line comes from is in the caption below the table
        "dataset": d.dataset, "rule": _ORIGIN.sub("", rules.get(d.dataset, "–")),
        "a_only_fail": d.a_only_fail, "b_only_fail": d.b_only_fail, "p_text": fmt.p_value(d.p),
        "mcnemar_q": fmt.p_value(d.q), "mde_text": fmt.pct(d.mde) if d.mde is not None else "–",
        **({"test": _test(d)} if clustered else {}),
    } for d in scored])
    show_table(frame, name="compare-thresholded", hide_index=True, column_config=columns.config(
        frame.columns, rule=st.column_config.TextColumn("Fails when", width="medium"), **_TEST_COLUMN,
        a_only_fail=columns.count("Only A fails"), b_only_fail=columns.count("Only B fails"),
        p_text=_p_column(clustered),
        mcnemar_q=st.column_config.TextColumn(
            "q (BH)", alignment="right",
            help="Benjamini–Hochberg over every dataset's paired test of the failures (one family)"),
        mde_text=st.column_config.TextColumn(
            "Detectable", alignment="right",
            help="The smallest difference in failure rate the exact McNemar test finds with 80% power at "
                 "α = 0.05, given how often the two models disagree here")))
    st.caption(rules_caption(rules, {d.dataset for d in scored}) + " The threshold turns a score into pass/fail "
               "to pick the failures to analyse: the error types and the questions only one model fails below "
               "count these. The test of the scores themselves is above; this one is on the thresholded verdicts. "
               "The analysis threshold in the sidebar moves the line.")
    for d in scored:
        with st.expander(f"{d.dataset}: failures and the paired result at 0.5, 0.7 and 0.9 of the range",
                         expanded=d.dataset in c.thresholds):
            st.caption(f"Mean {md(d.scores.metric, 80)} on the {fmt.plural(d.scores.n, 'question')} both scored: "
                       f"A {_score(d, d.scores.a_mean)}, B {_score(d, d.scores.b_mean)}.")
            _strip(d)


_TEST_COLUMN = {"test": st.column_config.TextColumn(
    "Test", help="McNemar exact, or where the dataset's questions are clustered (several on one passage, a "
                 "task's trials) the cluster-robust paired t (CR1) of the failure rates, with its clusters")}


def _p_column(clustered: bool):
    """The p column of a table of pass/fail tests: McNemar's, or each row's own test's."""
    if not clustered:
        return st.column_config.TextColumn("McNemar p", alignment="right",
                                           help="Exact McNemar test on the questions only one model fails")
    return st.column_config.TextColumn("p", alignment="right", help="The p of each row's test (the Test column)")


def _test(d) -> str:
    """A dataset's pass/fail test in a cell: "McNemar exact", "clustered t, 12 clusters" (the
    cluster-robust paired t; the column's help says so)."""
    return f"clustered t, {fmt.plural(d.clusters, 'cluster')}" if d.clustered else d.test


def _score_test(d) -> str:
    """A scored dataset's test in a cell: "Wilcoxon", "t, 25 clusters" (the cluster-robust t)."""
    test = d.scores.clustered
    return "Wilcoxon" if test is None else f"t, {fmt.plural(test.clusters, 'cluster')}"


def _score_difference(d) -> str:
    """B − A with the interval of the test in use: the bootstrap's, or the clustered t's."""
    sc = d.scores
    mean, low, high = ((sc.mean_difference, sc.bootstrap_ci_low, sc.bootstrap_ci_high) if sc.clustered is None
                       else (sc.clustered.result.mean, sc.clustered.result.low, sc.clustered.result.high))
    return (f"{fmt.signed_score(mean, *_span(d))} "
            f"({fmt.score_interval(low, high, *_span(d), signed=True)})")


def _score_mde(d) -> float | None:
    return d.scores.clustered.mde if d.scores.clustered else d.scores.mde


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
