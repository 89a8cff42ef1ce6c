"""Two numbers, never confused (DESIGN.md, Verdicts): a model's result on a dataset as the
harness reports it — in its own metric and scale (HELM's MMLU accuracy, a MedHELM jury mean 4.48
of 1–5, NarrativeQA's F1 0.339, an Inspect partial-credit mean) — and, apart, the failure rate
under the analysis threshold: ErrorMap's device for choosing which predictions to analyse (0.7
of the metric's range unless the analyst moves it). For a 0/1 metric they are one number.

Shared by the overview, the report, `python -m stats accuracy` and anything else that shows a
model's result: `model_accuracy` returns one row per model and dataset (and split) with both,
each with its interval, and `accuracy_rows` the same as plain dicts for JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import polars as pl

from core.numbers import NumberError, decimal_number, shown
from core.significance import mean_of_means_interval, t_interval, wilson
from core.verdicts import RELATIVE_THRESHOLD, is_binary_rule, lookup
from store import queries as q

from . import fmt

# the sensitivity strip: failures and the paired result at these shares of the metric's range
SENSITIVITY = (0.5, 0.7, 0.9)

# scale sources of a mean of credit on 0–1 (Inspect's value_to_float, an Inspect accuracy): its
# headline reads as a percentage, as Inspect's own accuracy does
_CREDIT_SOURCES = {"inspect value_to_float", "inspect accuracy"}


def default_line(low: float, high: float, lower_is_better: bool, share: float = RELATIVE_THRESHOLD) -> float:
    """The line `share` of the way up the scale (ErrorMap: 0.7); for a lower-is-better metric,
    `share` of the way down from the top — as core/verdicts.py places it."""
    return round(low + (1 - share if lower_is_better else share) * (high - low), 12)


@dataclass(frozen=True)
class DatasetRule:
    """How a dataset's runs are judged, and whether its analysis threshold can be moved."""

    dataset: str
    metric: str | None
    low: float | None
    high: float | None
    lower_is_better: bool
    stored: float | None  # the line the ingest judged by (when every run shares one)
    binary: bool
    movable: bool
    why_fixed: str | None  # why the threshold cannot be moved, when it cannot

    def line(self, share: float) -> float:
        return default_line(self.low, self.high, self.lower_is_better, share)

    def set_by(self, line: float | None, moved: bool) -> str | None:
        """Who set `line`: "you" (this view), "ingest" (--pass-threshold) or None (ErrorMap's default)."""
        if moved:
            return "you"
        if line is None or self.low is None or self.high is None:
            return None
        return None if math.isclose(line, self.line(RELATIVE_THRESHOLD), abs_tol=1e-9) else "ingest"


def dataset_rules(con, datasets=None) -> dict[str, DatasetRule]:
    """Per dataset, its rule: one metric on one scale, judged by a threshold that is not the
    log's own verdict and not a 0/1 metric's "pass = correct", can have its threshold moved."""
    out = {}
    for row in q.dataset_rules(con, datasets).iter_rows(named=True):
        # a list of no value comes back NULL
        metrics, lows, highs = row["metrics"] or [], row["lows"] or [], row["highs"] or []
        directions, lines, sources = row["directions"] or [], row["thresholds"] or [], row["scale_sources"] or []
        metric = metrics[0] if len(metrics) == 1 else None
        low = lows[0] if len(lows) == 1 else None
        high = highs[0] if len(highs) == 1 else None
        lower = bool(directions and directions[-1]) if len(directions) == 1 else False
        binary = metric is not None and all(is_binary_rule(metric, low, high, s) for s in sources or [None])
        why = None
        if row["log_verdict_runs"] == row["runs"]:
            why = "its verdicts are the log's own"
        elif row["log_verdict_runs"]:
            why = "some of its runs carry the log's own verdicts"
        elif metric is None:
            why = f"its runs are judged on different metrics ({', '.join(metrics)})"
        elif low is None or high is None or not high > low:
            why = "its runs are on different or unknown scales"
        elif len(directions) > 1:
            why = "its runs disagree on whether lower is better"
        elif binary:
            why = f"{metric} is 0/1: pass = correct"
        out[row["dataset"]] = DatasetRule(
            dataset=row["dataset"], metric=metric, low=low, high=high, lower_is_better=lower,
            stored=lines[0] if len(lines) == 1 else None, binary=binary, movable=why is None,
            why_fixed=why)
    return out


def usable_thresholds(rules: dict[str, DatasetRule], asked: dict[str, float] | None) -> tuple[dict[str, float], list[str]]:
    """The asked thresholds that apply (a movable dataset, a line inside its scale), and why
    each other one was set aside, for the page and the CLI to say."""
    kept, dropped = {}, []
    for dataset, line in sorted((asked or {}).items()):
        rule = rules.get(dataset)
        if rule is None:
            dropped.append(f"{dataset}: no such dataset")
        elif not rule.movable:
            dropped.append(f"{dataset}: the threshold cannot be moved ({rule.why_fixed})")
        elif not (math.isfinite(line) and rule.low <= line <= rule.high):
            dropped.append(f"{dataset}: {fmt.number(line)} lies outside its scale {fmt.span(rule.low, rule.high)}")
        else:
            kept[dataset] = float(line)
    return kept, dropped


def parse_thresholds(items) -> dict[str, float]:
    """`DATASET=X` (CLI) or `DATASET:X` (URL) items as {dataset: line}; a later item wins.
    Raises ValueError naming the item that is not one."""
    out = {}
    for item in items or ():
        name, sep, value = item.rpartition("=") if "=" in item else item.rpartition(":")
        try:
            line = decimal_number(value, "")  # ASCII digits only: float() takes "١" and "1_0"
        except NumberError:
            line = math.nan
        if not sep or not name or not math.isfinite(line):
            raise ValueError(f"{shown(item)}: expected DATASET=X with X a number, e.g. aci_bench=4.2")
        out[name] = line
    return out


# ---------------------------------------------------------------- one row per model × dataset

_COLUMNS = {
    "model": pl.String, "dataset": pl.String, "split": pl.String, "n": pl.Int64,
    "metric": pl.String, "headline_metric": pl.String, "headline": pl.Float64,
    "headline_ci_low": pl.Float64, "headline_ci_high": pl.Float64, "headline_interval": pl.String,
    "headline_kind": pl.String, "headline_of": pl.String, "headline_as_rate": pl.Boolean, "headline_note": pl.String,
    "n_domains": pl.Int64, "scale_min": pl.Float64, "scale_max": pl.Float64,
    "lower_is_better": pl.Boolean, "mean_score": pl.Float64, "correct": pl.Int64,
    "accuracy": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "analysis_threshold": pl.Float64, "threshold_set_by": pl.String, "analysis_rule": pl.String,
    "failures": pl.Int64, "failure_rate": pl.Float64, "failure_ci_low": pl.Float64,
    "failure_ci_high": pl.Float64, "clusters": pl.Int64,
}
# what `stats accuracy --json` prints, in this order (the first eight are the documented contract)
JSON_KEYS = ("model", "dataset", "split", "n", "correct", "accuracy", "ci_low", "ci_high",
             "metric", "scale_min", "scale_max", "lower_is_better", "headline_metric", "headline_kind",
             "headline_as_rate", "headline",
             "headline_ci_low", "headline_ci_high", "headline_interval", "headline_of",
             "headline_note", "mean_score", "analysis_threshold", "analysis_rule", "failures",
             "failure_rate", "failure_ci_low", "failure_ci_high", "clusters")


def _combine(parts: list[tuple[int, float, float]]) -> tuple[int, float, float]:
    """(n, mean, m2) of the union of groups given as (n, mean, m2) (Chan et al.)."""
    n, mean, m2 = 0, 0.0, 0.0
    for nk, mk, m2k in parts:
        if not nk:
            continue
        delta = mk - mean
        total = n + nk
        mean += delta * nk / total
        m2 += m2k + delta * delta * n * nk / total
        n = total
    return n, mean, m2


def _clip(v: float, low, high) -> float:
    """An interval end kept inside the metric's scale (unchanged when the scale is unknown)."""
    if v is None or math.isnan(v):
        return v
    if low is not None:
        v = max(v, low)
    return min(v, high) if high is not None else v


def _one(values: set, what: str, notes: list[str]):
    """The one value the runs share, else None with a note."""
    values = {v for v in values if v is not None}
    if len(values) > 1:
        notes.append(f"its runs have different {what} ({', '.join(sorted(map(str, values)))})")
        return None
    return next(iter(values), None)


def _group_row(key: dict, runs: list[dict], split: str, thresholds: dict[str, float],
               rules: dict[str, DatasetRule]) -> dict:
    """Both numbers for one model × dataset (× split) from its per-run aggregates."""
    notes: list[str] = []
    n = sum(r["n"] for r in runs)
    passed = sum(r["passed"] for r in runs)
    log_verdicts = all(r["pass_threshold"] is None for r in runs)
    metric = _one({r["main_metric"] for r in runs}, "metrics", notes)
    low = _one({r["metric_min"] for r in runs}, "scale bottoms", notes)
    high = _one({r["metric_max"] for r in runs}, "scale tops", notes)
    lower = bool(_one({bool(r["lower_is_better"]) for r in runs}, "directions", notes))
    headline_metric = _one({r["headline_metric"] for r in runs}, "headline metrics", notes)
    if not log_verdicts and any(r["pass_threshold"] is None for r in runs):
        notes.append("some of its runs carry the log's own verdicts, others a threshold on a score")
    # per domain: HELM reports a dataset it runs subject by subject as the mean over subjects
    domains: dict = {}
    for r in runs:
        domains.setdefault(r["domain"], []).append(r)
    per_domain = [(sum(r["n"] for r in rs), sum(r["passed"] for r in rs),
                   _combine([(r["scored"], r["mean"] or 0.0, r["m2"] or 0.0) for r in rs]))
                  for rs in domains.values()]
    over_domains = len(domains) > 1 and all(r["source_format"] == "helm" for r in runs)
    non_binary = sum(r["non_binary"] for r in runs)
    # a 0/1 metric by its rule, not by this model's data: a model that happens to score only 0
    # and 1 on a 0–1 metric reads like every other model on the dataset
    binary = (non_binary == 0
              and all(is_binary_rule(r["main_metric"], r["metric_min"], r["metric_max"], r["scale_source"])
                      for r in runs)
              and all(0 < r["pass_threshold"] <= 1 for r in runs if r["pass_threshold"] is not None))
    if binary and low is None and high == 1:
        low = 0.0  # a store from before migration 010 kept no bottom; a 0/1 scale's is 0
    # the log's own verdicts on a continuous score with a declared scale (an EEE record's
    # is_correct beside a mean-score result): the harness's number is the mean, the verdicts the failures
    scored_mean = (low is not None and high is not None and high > low and non_binary > 0
                   and sum(r["scored"] for r in runs) == n)
    kind = None if notes else "rate" if binary or (log_verdicts and not scored_mean) else "mean"
    out = dict(key, n=n, headline_kind={"rate": "pass rate", "mean": "mean score"}.get(kind), metric=metric,
               headline_metric=headline_metric or (metric if kind else None), n_domains=len(domains),
               scale_min=low, scale_max=high, lower_is_better=lower, failures=n - passed,
               failure_rate=(n - passed) / n if n else math.nan)
    if kind == "rate":
        out.update(_rate(n, passed, per_domain, over_domains, metric, log_verdicts))
    else:
        out["failure_ci_low"], out["failure_ci_high"] = wilson(n - passed, n)
    if kind == "mean":
        out.update(_mean(per_domain, over_domains, metric, low, high, runs))
        if log_verdicts:
            out["analysis_rule"] = "failures: the log's own verdicts"
        else:
            moved = key["dataset"] in thresholds
            line = thresholds[key["dataset"]] if moved else _one({r["pass_threshold"] for r in runs}, "thresholds", notes)
            rule = rules.get(key["dataset"])
            set_by = rule.set_by(line, moved) if rule else None
            out.update(analysis_threshold=line, threshold_set_by=set_by or "ErrorMap",
                       analysis_rule=fmt.failure_rule(line, low, high, lower, set_by))
    elif kind is None:
        out["analysis_rule"] = "failures: by each run's own rule"
    if notes:
        notes = ["no single headline: " + "; ".join(notes)]
    _harness_notes(out, runs, metric, headline_metric, over_domains, split, notes)
    return out


def _rate(n: int, passed: int, per_domain: list, over_domains: bool, metric, log_verdicts: bool) -> dict:
    """A 0/1 metric or the log's own verdicts: the pass rate is the harness's number (HELM's
    mean of the domains' pass rates for a dataset it runs domain by domain)."""
    low, high = wilson(passed, n)
    # Wilson's interval is symmetric: the failures' is the passes' mirrored (one scipy call, not two)
    out = dict(correct=passed, accuracy=passed / n if n else math.nan, ci_low=low, ci_high=high,
               failure_ci_low=1 - high, failure_ci_high=1 - low, headline_as_rate=True,
               analysis_rule=("failures: the log's own verdicts" if log_verdicts
                              else f"failures: {metric} = 0 (pass = correct)"))
    if over_domains:
        value, lo, hi = mean_of_means_interval([(dn, dp / dn, dp * (1 - dp / dn)) for dn, dp, _ in per_domain])
        out.update(headline=value, headline_ci_low=_clip(lo, 0.0, 1.0), headline_ci_high=_clip(hi, 0.0, 1.0),
                   headline_interval="t over domains", headline_of="mean of the domains' pass rates")
    else:
        out.update(headline=out["accuracy"], headline_ci_low=low, headline_ci_high=high,
                   headline_interval="Wilson", headline_of="pass rate" if log_verdicts else f"mean {metric} (0/1)")
    return out


def _mean(per_domain: list, over_domains: bool, metric, low, high, runs: list[dict]) -> dict:
    """A continuous metric: the mean score is the harness's number (HELM's mean of the domains'
    means for a dataset it runs domain by domain), with a t interval cut at the scale's ends."""
    pooled_n, pooled_mean, pooled_m2 = _combine([c for _, _, c in per_domain])
    if over_domains:
        value, lo, hi = mean_of_means_interval([c for _, _, c in per_domain])
        out = dict(headline=value, headline_interval="t over domains", headline_of=f"mean of the domains' mean {metric}")
    else:
        lo, hi = t_interval(pooled_n, pooled_mean, pooled_m2)
        out = dict(headline=pooled_mean, headline_interval="t", headline_of=f"mean {metric}")
    # a t interval can reach past the scale (F1 0.17 ± 0.32 over 4 questions): cut at its ends
    return dict(out, mean_score=pooled_mean, headline_ci_low=_clip(lo, low, high),
                headline_ci_high=_clip(hi, low, high),
                headline_as_rate=(low == 0 and high == 1 and (
                    is_binary_rule(metric, low, high, runs[0]["scale_source"])
                    or all(r["scale_source"] in _CREDIT_SOURCES for r in runs))))


def _harness_notes(out: dict, runs: list[dict], metric, headline_metric, over_domains: bool, split: str,
                   notes: list[str]) -> None:
    """Where the number from the scores is not the harness's headline, say so (after `notes`) —
    and take the harness's own number from its logs when they carry it."""
    aggregates = [r["harness_value"] for r in runs
                  if r["harness_metric"] == headline_metric and r["harness_value"] is not None
                  and math.isfinite(r["harness_value"])]
    own = None
    if len(aggregates) == len(runs) and split in (q.MAIN_SPLIT, *{r["main_split"] for r in runs} - {None}):
        own = sum(aggregates) / len(aggregates) if over_domains or len(runs) == 1 else None
    if headline_metric and metric and headline_metric != metric:
        # judged on another metric than the harness's headline (e.g. --main-metric): the mean of
        # the judged scores is not the headline; the logs' own aggregates are, when they have it
        out.update(headline=own, headline_ci_low=None, headline_ci_high=None, headline_interval=None,
                   headline_of="the logs' own aggregate" if own is not None else None,
                   headline_as_rate=bool(lookup(headline_metric) and lookup(headline_metric).binary))
        notes.append(f"judged on {metric}, but the harness's headline is {headline_metric}"
                     + ("" if own is not None else " (not in these logs for this view)"))
    corpus = [r for r in runs if r["harness_note"] and "over the corpus" in r["harness_note"]]
    if corpus:
        out.update(headline=own if len(runs) == 1 else None, headline_ci_low=None, headline_ci_high=None,
                   headline_interval=None, headline_of="the log's own corpus-level aggregate" if len(runs) == 1 else None)
        notes.append(f"the harness computes {corpus[0]['harness_metric']} over the corpus; the mean of "
                     f"per-question scores ({fmt.number(out.get('mean_score'))}) only decides which predictions fail")
    if len(runs) == 1 and runs[0]["harness_agrees"] and runs[0]["harness_metric"] == metric \
            and out.get("headline") is not None and split in (q.MAIN_SPLIT, runs[0]["main_split"]):
        # the log agrees over every prediction, yet one outcome per question is counted here: repeated
        # trials (Inspect epochs) average differently than their first
        value, mine = runs[0]["harness_value"], out["headline"]
        tolerance = 1e-9 * max(1, out["n"])
        if value is not None and math.isfinite(value) and abs(value - mine) > tolerance \
                and abs(value - 100 * mine) > 100 * tolerance:
            notes.append(f"the log's own number is {fmt.number(value)}, over every trial; this counts the "
                         "latest outcome of each question (its first trial)")
    groups = {r["group_aggregate"] for r in runs}
    if over_domains is False and len(runs) > 1 and len(groups) == 1 and None not in groups \
            and all(r["source_format"] == "lm-eval" for r in runs) and split in (q.MAIN_SPLIT, *{r["main_split"] for r in runs}):
        # an lm-eval group run task by task: its number is lm-eval's own for the group (its
        # weighting is the group's config), not the pass rate pooled over the tasks' questions
        value = next(iter(groups))
        out.update(headline=value, headline_ci_low=None, headline_ci_high=None, headline_interval=None,
                   headline_of="lm-eval's own group aggregate")
        pooled = out.get("accuracy")
        notes.append(f"lm-eval's own number for the group {out['dataset']}; "
                     + (f"pooled over its {len(runs)} tasks' questions the pass rate is {fmt.pct(pooled)}"
                        if pooled is not None else f"it has {len(runs)} tasks"))
    part = runs[0] if len(runs) == 1 else None
    if part and part["harness_n"] and part["harness_n"] > out["n"] and part["harness_value"] is not None \
            and math.isfinite(part["harness_value"]) and (part["harness_note"] or "").startswith("not compared: the log holds") \
            and part["harness_metric"] in (headline_metric, metric) and split in (q.MAIN_SPLIT, part["main_split"]):
        # a log trimmed to share (lm-eval --limit, then a few samples kept): the harness's number is
        # its own aggregate over every question it ran, not a recount of the few the log holds
        out.update(headline=part["harness_value"], headline_ci_low=None, headline_ci_high=None, headline_interval=None,
                   headline_of="the log's own aggregate")
        notes.append(f"the harness's number is its own aggregate over {part['harness_n']:,} questions; the log "
                     f"holds {out['n']:,} of them, and the failures here are of those")
    differ = sum(1 for r in runs if r["harness_agrees"] is False)
    if differ and not (headline_metric and metric and headline_metric != metric):
        notes.append(f"{differ} of its runs differ from their log's own number (see the data page)")
    if split != q.MAIN_SPLIT and any(r["main_split"] for r in runs):
        notes.append(f"on split {split}; the harness reports its headline on the main split")
    if notes:
        out["headline_note"] = "; ".join(notes)


def model_accuracy(con, models=None, datasets=None, domains=None, by: str | None = "dataset",
                   split: str = q.MAIN_SPLIT, thresholds: dict[str, float] | None = None) -> pl.DataFrame:
    """Per model and dataset (`by="split"`: and split), the harness's headline and the failure
    rate under the analysis threshold, each with its 95% interval (columns: `_COLUMNS`).

    `accuracy` (with `correct`, `ci_low`, `ci_high`: Wilson) is the pass rate of a 0/1 metric or
    of the log's own verdicts, pooled over the questions, and NULL for a continuous metric, whose
    thresholded rate is `failure_rate` alone. `headline` is the harness's number: the pass rate
    or the mean score, over the questions, or for a dataset HELM runs domain by domain (MMLU's
    subjects, WMT's language pairs) the mean of the domains' numbers."""
    if by not in ("dataset", "split"):
        raise ValueError(f"model_accuracy by {by!r}")
    rules = dataset_rules(con, datasets)
    thresholds, _ = usable_thresholds(rules, thresholds)
    stats = q.outcome_stats(con, models, datasets, domains, by_split=by == "split", split=split,
                            thresholds=thresholds or None)
    keys = ["model", "dataset"] + (["split"] if by == "split" else [])
    rows = []
    for _, group in stats.group_by(keys, maintain_order=True):
        runs = group.to_dicts()
        key = {k: runs[0][k] for k in keys}
        rows.append(_group_row(key, runs, split, thresholds, rules))
    _clustered_intervals(con, rows, models, datasets, domains, split, thresholds)
    schema = {k: v for k, v in _COLUMNS.items() if by == "split" or k != "split"}
    return pl.DataFrame(rows, schema=schema).with_columns(
        pl.col(pl.Float64).fill_nan(None)).sort(keys)


CLUSTERED_INTERVAL = "cluster-robust t"


def _clustered_intervals(con, rows: list[dict], models, datasets, domains, split, thresholds) -> None:
    """Where a dataset's questions are clustered (a shared passage, clusters given in the log), the
    harness's number's interval is the cluster-robust one (core/clustered.py: CR1 sandwich over
    cluster sums, t on G − 1 df), and `clusters` says how many it rests on. A headline that is a
    mean over domains or the log's own aggregate keeps its interval (or none)."""
    from core.clustered import clustered_mean

    from .clusters import cluster_labels

    if not any(r["headline_interval"] in ("Wilson", "t") for r in rows):
        return
    outcomes = q.clustered_outcomes(con, models, datasets, domains, split=split, thresholds=thresholds or None)
    if outcomes.is_empty():
        return
    groups = {key: g for key, g in outcomes.group_by("model", "dataset")}
    for r in rows:
        g = groups.get((r["model"], r["dataset"]))
        if g is None or r["headline_interval"] not in ("Wilson", "t"):
            continue
        rate = r["headline_interval"] == "Wilson"
        g = g if rate else g.filter(pl.col("score").is_not_null())
        values = g["is_correct"].cast(pl.Float64) if rate else g["score"]
        labels = cluster_labels(g)
        result = clustered_mean(values.to_numpy(), labels)
        if result.clusters == len(labels) or result.clusters < 2:
            continue  # no question shares a cluster with another here: the plain interval stands
        low, high = (0.0, 1.0) if rate else (r["scale_min"], r["scale_max"])
        r.update(headline_ci_low=_clip(result.low, low, high), headline_ci_high=_clip(result.high, low, high),
                 headline_interval=CLUSTERED_INTERVAL, clusters=result.clusters)


def accuracy_rows(frame: pl.DataFrame) -> list[dict]:
    """`model_accuracy` rows as JSON-ready dicts (`JSON_KEYS`; NaN as null)."""
    keys = [k for k in JSON_KEYS if k in frame.columns]
    return [{k: row[k] for k in keys} for row in frame.select(keys).iter_rows(named=True)]


def headline_text(row: dict) -> str:
    """The harness's number as every page, table and report prints it: "4.48 of 1–5", "54.5%"."""
    return fmt.headline(row["headline"], bool(row["headline_as_rate"]), row["scale_min"], row["scale_max"])


def headline_interval_text(row: dict) -> str:
    if row["headline_ci_low"] is None:
        return "–"
    if row["headline_as_rate"]:
        return fmt.interval(row["headline_ci_low"], row["headline_ci_high"], row["n"])
    return fmt.score_interval(row["headline_ci_low"], row["headline_ci_high"], row["scale_min"], row["scale_max"])


def is_continuous(row: dict) -> bool:
    """Whether the harness's number is a mean score, so the failure rate is another number (under
    the analysis threshold, or the log's own verdicts) shown apart with its rule."""
    return row["headline_kind"] == "mean score"


def unequal_questions(acc: pl.DataFrame) -> list[str]:
    """Datasets whose models answered different numbers of questions, e.g. "mmlu: 981 vs 1,018
    questions": their numbers are over different question sets."""
    out = []
    for (dataset,), group in acc.group_by("dataset", maintain_order=True):
        sizes = sorted(set(group["n"].to_list()))
        if len(sizes) > 1:
            shown = " vs ".join(f"{n:,}" for n in sizes) if len(sizes) <= 4 else f"{sizes[0]:,} to {sizes[-1]:,}"
            out.append(f"{dataset}: {shown} questions")
    return out
