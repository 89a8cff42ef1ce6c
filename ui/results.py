"""A model's result on a dataset, the way every page says it: the harness's own number with
its interval, and apart, for a continuous metric, the failures under the analysis threshold with
the rule beside it; the failures at 0.5, 0.7 and 0.9 of the range; what moving a threshold did."""

from __future__ import annotations

import polars as pl
import streamlit as st

import stats
from stats import fmt
from stats.headline import SENSITIVITY, is_continuous
from store import queries as q

from .data import load
from .tables import show_table
from .text import md

CHANGE_IT = "change it under **Analysis threshold** in the sidebar"


def results_caption(group: pl.DataFrame) -> None:
    """Under a dataset's chart: which number it is, how its interval is made, and for a
    continuous metric the analysis threshold's rule; notes where a number is not the headline."""
    rows = group.to_dicts()
    first = rows[0]
    interval = {"Wilson": "Wilson 95% interval", "t": "Student t 95% interval",
                "cluster-robust t": (f"cluster-robust 95% t interval over {fmt.count(first['clusters'])} clusters "
                                     "of questions (a shared passage or a cluster given in the log; CR1 sandwich)"
                                     if first.get("clusters") else "cluster-robust 95% t interval"),
                "t over domains": "95% t interval of a mean of domain means (stratified standard error)"}
    what = first["headline_of"] or "no single headline"
    scale = "" if first["headline_as_rate"] else f" on {fmt.span(first['scale_min'], first['scale_max'])}"
    parts = [f"The harness's number: {md(what)}{scale}"
             + (f", {interval.get(first['headline_interval'], first['headline_interval'])}"
                if first["headline_interval"] else "") + "."]
    rules = list(dict.fromkeys(r["analysis_rule"] for r in rows if is_continuous(r)))
    if rules:
        parts.append("Analysis threshold — " + "; ".join(md(rule) for rule in rules) + f"; {CHANGE_IT}.")
    st.caption(" ".join(parts))
    for r in rows:
        if r["headline_note"]:
            st.caption(f":material/info: {md(r['model'])}: {md(r['headline_note'], 1000)}.")


def rules_caption(acc: pl.DataFrame) -> None:
    """One line for several datasets: which of them are failures under which analysis threshold
    (datasets sharing a rule named together), and the notes where a number is not the headline."""
    rules: dict[str, list[str]] = {}
    for r in acc.iter_rows(named=True):
        if is_continuous(r):
            rules.setdefault(r["analysis_rule"], []).append(r["dataset"])
    if rules:
        st.caption("Analysis threshold — " + "; ".join(
            f"{', '.join(md(d) for d in dict.fromkeys(datasets))}: {md(rule)}" for rule, datasets in rules.items())
            + f"; {CHANGE_IT}. For a 0/1 metric the failures are the questions it got wrong.")
    for r in acc.iter_rows(named=True):
        if r["headline_note"]:
            st.caption(f":material/info: {md(r['model'])} on {md(r['dataset'])}: {md(r['headline_note'], 1000)}.")


def sensitivity_strip(acc: pl.DataFrame, f) -> None:
    """For each dataset on a continuous metric: each model's failures if the threshold sat at
    0.5, 0.7 or 0.9 of the metric's range (and at the line in use, when it is none of those)."""
    continuous = acc.filter((pl.col("headline_kind") == "mean score") & pl.col("analysis_threshold").is_not_null())
    if continuous.is_empty():
        return
    rules = load(stats.dataset_rules)
    lines: dict[str, list[float]] = {}
    for (dataset,), group in continuous.group_by("dataset", maintain_order=True):
        rule = rules.get(dataset)
        if rule is None or not rule.movable:
            continue
        values = [rule.line(share) for share in SENSITIVITY]
        current = group["analysis_threshold"][0]
        lines[dataset] = values + ([current] if all(abs(current - v) > 1e-9 for v in values) else [])
    if not lines:
        return
    counts = load(q.failures_at, lines=lines, models=f.models or None, domains=f.domains, split=f.split)
    in_use = {(r["dataset"], r["model"]): r["analysis_threshold"] for r in continuous.iter_rows(named=True)}
    rows = []
    for (dataset, model), group in counts.sort("dataset", "model").group_by("dataset", "model", maintain_order=True):
        if (dataset, model) not in in_use:
            continue
        rule = rules[dataset]
        op = ">" if rule.lower_is_better else "<"
        row = {"dataset": dataset, "lines": " · ".join(f"{op} {fmt.number(v)}" for v in lines[dataset]),
               "model": model}
        for line, n, failed in group.select("line", "n", "failures").iter_rows():
            share = fmt.relative(line, rule.low, rule.high, rule.lower_is_better)
            key = f"at {share:g}" if any(abs(share - x) < 1e-9 for x in SENSITIVITY) else "moved"
            mark = " ◀" if abs(line - in_use[(dataset, model)]) < 1e-9 else ""
            row[key] = f"{fmt.count(failed)} ({fmt.pct(failed / n if n else None)}){mark}"
        rows.append(row)
    if not rows:
        return
    order = ["dataset", "lines", "model", *(f"at {x:g}" for x in SENSITIVITY)]
    order += ["moved"] if any("moved" in r for r in rows) else []
    table = pl.DataFrame([{k: r.get(k, "–") for k in order} for r in rows], schema={k: pl.String for k in order})
    st.markdown("**Failures at other thresholds** (continuous metrics)")
    show_table(table, name="sensitivity", hide_index=True, column_config={
        "dataset": "Dataset", "model": "Model",
        "lines": st.column_config.TextColumn("Lines", help="A failure when the score is on the wrong side of "
                                             "the line: at 0.5, 0.7 and 0.9 of the metric's range, and the "
                                             "line set for this view when it is another"),
        **{f"at {x:g}": st.column_config.TextColumn(f"At {x:g} of range", alignment="right") for x in SENSITIVITY},
        "moved": st.column_config.TextColumn("At the line set here", alignment="right")})
    st.caption("Each cell: the model's questions that would fail at that line, of those it answered; ◀ marks "
               "the line in use. The harness's number does not move with it; only which predictions count "
               "as failures — and so which are analysed — does.")


def moved_threshold_note(f) -> None:
    """What the thresholds moved for this view did to the failures: those newly failing are not
    analysed yet, those newly passing have their labels set aside."""
    if not f.thresholds:
        return
    moved = load(q.moved_verdicts, thresholds=f.thresholds, models=f.models, datasets=f.datasets,
                 domains=f.domains, split=f.split)
    lines = []
    for dataset, failing, passing in moved.iter_rows():
        line = fmt.number(f.thresholds[dataset])
        lines.append(f"**{md(dataset)}** at {line}: {fmt.plural(failing, 'prediction')} fail that passed as "
                     f"ingested (not analysed yet), {fmt.plural(passing, 'prediction')} pass that failed "
                     "(their labels are set aside, not deleted)")
    if lines:
        flags = " ".join(f"--pass-threshold {d}={fmt.number(v)}" for d, v in sorted(f.thresholds.items()))
        st.info("Analysis threshold moved for this view — " + "; ".join(lines) + ". To analyse the new "
                f"failures, re-ingest the logs with `{flags}` and run `python -m taxonomy analyze`; "
                "analyses already made stay with their predictions.", icon=":material/tune:")
