"""The static HTML report: one self-contained file (no scripts, no network) for people without
the app — accuracy per model and dataset, failure signatures, every pairwise comparison, each
with an SVG chart drawn at build time, and example failures of the leading categories with the
analyst's evidence. Every text from the logs is escaped."""

from __future__ import annotations

import html
import itertools
import sys
from datetime import datetime, timezone

import polars as pl
from tqdm import tqdm

from core.counts import UNDER_THRESHOLD
from core.names import visible
from store import FaultlineError
from store import queries as q
from taxonomy.calibration import analyst_caveat
from taxonomy.catalog import NOT_ERROR_TYPES

from . import fmt, svg
from .compare import (
    check_known,
    compare,
    mix_sentences,
    pick_analyst,
    score_lines,
    test_text,
    verdict,
)
from .headline import (
    headline_interval_text,
    headline_text,
    is_continuous,
    model_accuracy,
    unequal_questions,
)
from .shares import ESTIMAND, FEW, METHOD_CORRECTED, METHOD_SAMPLING
from .signatures import signature

_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:0.5rem 0 1.5rem}
th,td{border:1px solid #ccc;padding:0.25rem 0.5rem;text-align:right}
th:first-child,td:first-child{text-align:left}
.note{color:#555;font-size:0.9rem}
svg.chart{display:block;margin:0.5rem 0 1rem;max-width:100%;height:auto}
.example{border-left:3px solid #d62728;padding:0.25rem 0.75rem;margin:0.5rem 0 1rem}
.example pre{white-space:pre-wrap;background:#f6f6f6;padding:0.5rem;margin:0.25rem 0}
mark{background:#ffe08a}
"""
EXAMPLES_PER_CATEGORY = 3
LEADING_CATEGORIES = 5
EXCERPT_CHARS = 1200


def _e(v) -> str:
    # invisible and direction-changing characters as <U+XXXX>: a report shows text, never hides it
    return html.escape(visible(str(v)))


def _table(header: list[str], rows: list[list], styles: list[list[str]] | None = None) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, v in enumerate(row):
            style = f' style="{styles[i][j]}"' if styles and styles[i][j] else ""
            cells.append(f"<td{style}>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def build_report(con, models=None, datasets=None, domains=None, analyst=None,
                 thresholds: dict[str, float] | None = None) -> tuple[str, str]:
    """Return (html, one-line summary). `thresholds`: the analysis thresholds of continuous
    datasets (checked by `stats.headline.usable_thresholds`), as the dashboard's view sets them."""
    if not q.has_data(con):
        raise FaultlineError("the database holds no runs; load logs with `python -m ingest PATH`")
    check_known(con, models, datasets, domains)
    thresholds = thresholds or {}
    acc = model_accuracy(con, models, datasets, domains, by="dataset", thresholds=thresholds)
    if acc.is_empty():
        raise FaultlineError("no scored predictions match these models/datasets/domains")
    names = sorted(set(acc["model"].to_list()))
    analyst = pick_analyst(con, analyst, names, datasets, domains)

    moved = "; ".join(f"{d} {fmt.number(v)}" for d, v in sorted(thresholds.items()))
    parts = [f"<h1>Faultline report</h1><p class=note>Generated "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. Filters: datasets "
             f"{_e(', '.join(datasets or []) or 'all')}; domains {_e(', '.join(domains or []) or 'all')}; "
             f"analyst {_e(analyst or 'none')}"
             + (f"; analysis thresholds set for this report: {_e(moved)}" if moved else "") + ".</p>"]
    parts.append(_results(acc))
    parts.append("<h2>Failure signatures</h2>")
    if analyst is None:
        parts.append("<p>No analysed failures yet: run <code>python -m taxonomy analyze --analyst offline</code>.</p>")
    else:
        sig = signature(con, analyst, names, datasets, domains, thresholds=thresholds)
        errors, apart = sig.filter(pl.col("error_type")), sig.filter(~pl.col("error_type"))
        cats = sorted(set(errors["category"]))
        cell = {(r["model"], r["category"]): r for r in errors.iter_rows(named=True)}
        totals = {r["model"]: (r["failures"], r["labelled"]) for r in sig.iter_rows(named=True)}
        rows, styles = [], []
        for m in names:
            failures, labelled = totals.get(m, (0, 0))
            rows.append([m, f"{fmt.count(labelled)} of {fmt.count(failures)}"] + [
                _share_cell(cell[(m, c)]) if (m, c) in cell else "" for c in cats])
            # the shade is the interval's low end: a share from a handful is never drawn as certain
            styles.append(["", ""] + [
                f"background:rgba(214,39,40,{cell[(m, c)]['share_low']:.2f})"
                if (m, c) in cell and not cell[(m, c)]["few"] else "" for c in cats])
        method = METHOD_CORRECTED if bool(sig["corrected"].any()) else METHOD_SAMPLING
        parts.append("<p class=note>" + _e(ESTIMAND[0].upper() + ESTIMAND[1:]) + ". Each cell: the share, its 95% "
                     f"interval and the analyst's count; {_e(method)}. The shade is the interval's low end; a "
                     f"model with fewer than {FEW} labelled failures is not shaded. Other, Hard to Analyze and "
                     "No Model Error are not error types: listed apart below.</p>")
        parts.append(f"<p class=note>{_e(analyst_caveat(con, analyst))}</p>")
        if cats:
            parts.append(svg.heatmap(names, cats, {k: (0.0 if r["few"] else r["share"], r["count"])
                                                   for k, r in cell.items()},
                                     "Failure signatures: model × error type"))
            parts.append(_table(["model", "labelled of failures", *cats], rows, styles))
        else:
            parts.append("<p>No failure has an error type.</p>")
        if not apart.is_empty():
            parts.append("<h3>Not error types</h3><p class=note>Share of each model's failures, 95% interval "
                         "(the analyst's count).</p>")
            parts.append(_table(["model", "label", "share", "failures"], [
                [r["model"], r["category"], _share_cell(r), fmt.count(r["failures"])]
                for r in apart.iter_rows(named=True)]))
        if analyst == "offline":
            parts.append("<p class=note>Labels by the offline analyst: it reads only the failed "
                         "output's surface (cue words and a small classifier), so its categories are a "
                         "rough first pass; an output with no visible cause can only be Hard to "
                         "Analyze. Analyse with an LLM for labels to cite.</p>")

    parts.append("<h2>Pairwise comparisons</h2>")
    pairs = list(itertools.combinations(names, 2))
    unpaired = []
    # disable=None: a bar on a terminal, nothing in logs
    for a, b in tqdm(pairs, desc="comparing", file=sys.stderr, disable=None if len(pairs) >= 10 else True):
        c = compare(con, a, b, datasets, domains, analyst, thresholds=thresholds, types_by_dataset=False)
        if c.n_pairs == 0:
            unpaired.append(f"{a} / {b}")
            continue
        parts.append(f"<h3>{_e(a)} (A) vs {_e(b)} (B)</h3><p>{_e(verdict(c))}</p>")
        parts += [f"<p class=note>{_e(line)}</p>" for line in mix_sentences(c)]
        if len(c.by_dataset) > 1 or any(d.scores for d in c.by_dataset):
            parts.append(_table(
                ["dataset", "questions both answered", "only A fails", "only B fails", "paired test, p",
                 "scores (continuous metrics)"],
                [[d.dataset, fmt.count(d.n_pairs), fmt.count(d.a_only_fail), fmt.count(d.b_only_fail),
                  test_text(d), " · ".join(score_lines(d)) or "–"] for d in c.by_dataset]))
        if c.categories:
            parts.append(svg.intervals(
                [(r.category, r.delta, r.delta_low, r.delta_high) for r in c.categories
                 if r.delta == r.delta],
                f"{a} vs {b}: difference in category shares",
                f"share in {b} − share in {a} (Newcombe 95% interval)", signed=True))
            parts.append(f"<p class=note>Error types on the {fmt.plural(c.n_pairs, 'question')} both "
                         f"answered: A {fmt.count(c.a_total)}, B {fmt.count(c.b_total)} failures with an "
                         "error type.</p>")
            parts.append(_table(
                ["category", "A n", "B n", "A share", "B share", "p_fisher", "q_bh", "p_paired",
                 "p_errormap (paper's check)"],
                [[r.category, fmt.count(r.a_count), fmt.count(r.b_count), fmt.pct(r.a_share), fmt.pct(r.b_share),
                  fmt.p_value(r.p_fisher), fmt.p_value(r.q_bh), fmt.p_value(r.p_paired), fmt.p_value(r.p_errormap)]
                 for r in c.categories],
            ))
    if unpaired:
        parts.append(f"<p class=note>Not compared (no question answered by both): {_e('; '.join(unpaired))}.</p>")
    if analyst is not None:
        parts.append(_examples(con, analyst, names, datasets, domains, thresholds))
    body = "".join(parts)
    doc = (f"<!doctype html><html><head><meta charset=utf-8><title>Faultline report</title>"
           f"<style>{_CSS}</style></head><body>{body}</body></html>")
    compared = len(pairs) - len(unpaired)
    return doc, f"{len(names)} models, {compared} comparisons, analyst {analyst or 'none'}"


def _results(acc: pl.DataFrame) -> str:
    """Each model's result per dataset: the harness's own number in its metric and scale with
    its interval, and, for a continuous metric, the failure rate under the analysis threshold
    apart with its rule — one chart per dataset, on that dataset's scale."""
    parts = ["<h2>Results</h2><p class=note>Per dataset (datasets differ in difficulty and scale, so "
             "pooling them would mislead). <b>Harness's number</b>: the harness's own headline in its "
             "own metric and scale (a pass rate, a mean score; for a dataset HELM runs domain by "
             "domain, the mean of the domains' numbers), with its 95% interval (Wilson for a pass "
             "rate, Student t for a mean). <b>Failures under the analysis threshold</b>: for a "
             "continuous metric, the share of questions scoring below the line that picks which "
             "predictions are analysed (ErrorMap's 0.7 of the range unless set otherwise) — not the "
             "harness's number. For a 0/1 metric the two are one number.</p>"]
    acc = acc.sort(["dataset", "headline", "model"], descending=[False, True, False], nulls_last=True)
    for (dataset,), group in acc.group_by("dataset", maintain_order=True):
        rows = group.to_dicts()
        first = rows[0]
        rate = bool(first["headline_as_rate"])
        scale = None if rate else (first["scale_min"], first["scale_max"])
        continuous = [r for r in rows if is_continuous(r)]
        parts.append(f"<h3 class=dataset>{_e(dataset)}</h3>")
        if scale is None or None not in scale:
            parts.append(svg.intervals(
                [(r["model"], r["headline"], r["headline_ci_low"], r["headline_ci_high"]) for r in rows],
                f"{dataset}: the harness's number", f"{first['headline_of'] or 'headline'} with its 95% interval",
                scale=scale, marker=None if rate or not continuous else continuous[0]["analysis_threshold"]))
        parts.append(_table(
            ["model", "questions", "harness's number", "95% interval", "interval", UNDER_THRESHOLD.name],
            [[r["model"], fmt.count(r["n"]), headline_text(r), headline_interval_text(r),
              r["headline_interval"] or "–",
              f"{fmt.count(r['failures'])} ({fmt.pct(r['failure_rate'])}, 95% "
              f"{fmt.interval(r['failure_ci_low'], r['failure_ci_high'], r['n'])})" if is_continuous(r)
              else "same number"] for r in rows]))
        for rule in dict.fromkeys(r["analysis_rule"] for r in continuous):
            parts.append(f"<p class=note>{_e(rule)}.</p>")
        for r in rows:
            if r["headline_note"]:
                parts.append(f"<p class=note>{_e(r['model'])}: {_e(r['headline_note'])}.</p>")
    for line in unequal_questions(acc):
        parts.append(f"<p class=note>Models answered different numbers of questions on {_e(line)}: "
                     "their numbers are over different question sets.</p>")
    return "".join(parts)


def _marked(output: str, quote: str | None) -> str:
    """The output escaped, with the evidence quote marked where it occurs verbatim."""
    start = output.lower().find(quote.strip().lower()) if quote and quote.strip() else -1
    if start < 0:
        return _e(output)
    end = start + len(quote.strip())
    return f"{_e(output[:start])}<mark>{_e(output[start:end])}</mark>{_e(output[end:])}"


def _cut(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f" […{len(text) - limit:,} more characters]"


def _share_cell(r: dict) -> str:
    """'34.0% (12.0–57.0%; 12)', or for a model with a handful of labels its count alone."""
    if r["few"]:
        return f"{fmt.count(r['count'])} of {fmt.count(r['failures'])}"
    return f"{fmt.pct(r['share'])} ({fmt.pct(r['share_low'])}–{fmt.pct(r['share_high'])}; {fmt.count(r['count'])})"


def _examples(con, analyst: str, models, datasets, domains, thresholds: dict[str, float]) -> str:
    """A few failures of each leading category: the question, what the model wrote with the
    analyst's evidence marked, and the analyst's title and summary."""
    sig = signature(con, analyst, models, datasets, domains, thresholds=thresholds)
    # error types first (most failures first), then the labels that are not error types
    totals = [(neg, c) for _, neg, c in sorted((c in NOT_ERROR_TYPES, -n, c) for c, n in sig.group_by(
        "category").agg(n=pl.col("count").sum()).select("category", "n").iter_rows())]
    parts = [f"<h2>Example failures of the leading categories</h2><p class=note>Up to "
             f"{EXAMPLES_PER_CATEGORY} per category, from different models where possible; "
             "the analyst's evidence quote is marked in the output.</p>"]
    for neg, category in totals[:LEADING_CATEGORIES]:
        rows = q.instance_list(con, analyst, models, datasets, domains, category=category, thresholds=thresholds,
                               outcome="failed", limit=200)
        picked, seen = [], set()
        for pass_ in (0, 1):  # first one per model, then fill up
            for d, i, m in rows.select("dataset", "instance_id", "model").iter_rows():
                if len(picked) == EXAMPLES_PER_CATEGORY:
                    break
                if (d, i, m) not in picked and (pass_ or m not in seen):
                    picked.append((d, i, m))
                    seen.add(m)
        parts.append(f"<h3 class=category>{_e(category)} ({fmt.plural(-neg, 'failure')})</h3>")
        for d, i, m in picked:
            detail = next(iter(q.instance_detail(con, d, i, analyst, models=[m], thresholds=thresholds)), None)
            if detail is None:
                continue
            criteria = detail["required_criteria"] if isinstance(detail["required_criteria"], list) else []
            quote = next((c.get("evidence") for c in criteria if isinstance(c, dict) and c.get("evidence")), None)
            refs = fmt.gold(detail["refs"], detail["choices"])
            parts.append(
                f"<div class=example><p><b>{_e(m)}</b> · {_e(d)} · {_e(i)} — "
                f"<b>{_e(detail['error_title'] or '')}</b></p>"
                f"<p class=note>{_e(detail['error_summary'] or '')}</p>"
                f"<p class=note>Question</p><pre>{_e(_cut(detail['input_text'], 600))}</pre>"
                + (f"<p class=note>Reference</p><pre>{_e(_cut(refs, 600))}</pre>" if refs else "")
                + f"<p class=note>Output</p><pre>{_marked(_cut(detail['output_text']), quote)}</pre></div>")
    return "".join(parts)
