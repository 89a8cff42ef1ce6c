"""Which ranks of a leaderboard the data can tell apart (DESIGN.md, Statistics).

A leaderboard is a ranking, and the question a reader brings to it is whether the model above is
really better than the one below. On one dataset, the models are ranked by the harness's own
number (`stats.headline`); each adjacent pair is tested on the questions both answered with the
paired test that fits the metric — McNemar exact for pass/fail, the Wilcoxon signed-rank for a
score, the cluster-robust paired t where the questions are clustered (stats/clusters.py) — and the
p-values are adjusted by Benjamini–Hochberg across the ladder (one family). A new group starts
below a rank whose adjacent test is significant (q ≤ 0.05); the models of one group are the ones
the data cannot tell apart from their neighbours. Groups chain: the top and bottom of a long group
may differ from each other even though no adjacent pair does — the groups say where the ladder
has a detectable step, not that a group's models are equal.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from core import significance as t
from core.power import mcnemar_mde, paired_t_mde
from store import queries as q

from . import fmt
from .clusters import paired_test
from .headline import headline_text, model_accuracy


@dataclass(frozen=True)
class Rung:
    model: str
    rank: int
    headline: float
    low: float | None
    high: float | None
    n: int  # questions its number rests on
    group: int
    text: str  # the harness's number as pages print it


@dataclass(frozen=True)
class Step:
    """The paired test between two adjacent ranks (`a` above `b`) on the questions both answered."""

    a: str
    b: str
    n: int
    test: str | None  # None: no question both answered
    p: float | None
    q: float | None = None
    mde: float | None = None  # the smallest difference the test detects with 80% power, metric's scale
    clusters: int | None = None

    @property
    def separates(self) -> bool:
        return self.q is not None and self.q <= t.ALPHA


@dataclass(frozen=True)
class Ladder:
    dataset: str
    metric: str | None
    headline_of: str | None
    lower_is_better: bool
    as_rate: bool = False  # the harness's number reads as a rate (a pass rate, a mean of 0/1 credit)
    rungs: list[Rung] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    unranked: list[tuple[str, str]] = field(default_factory=list)  # (model, why)

    @property
    def groups(self) -> list[list[str]]:
        out: dict[int, list[str]] = {}
        for r in self.rungs:
            out.setdefault(r.group, []).append(r.model)
        return list(out.values())

    def to_json(self) -> dict:
        return {
            "dataset": self.dataset, "metric": self.metric, "headline_of": self.headline_of,
            "lower_is_better": self.lower_is_better,
            "models": [{"model": r.model, "rank": r.rank, "headline": r.headline, "low": r.low, "high": r.high,
                        "n": r.n, "group": r.group} for r in self.rungs],
            "adjacent": [{k: _number(v) for k, v in asdict(s).items()} for s in self.steps],
            "groups": self.groups,
            "unranked": [{"model": m, "why": why} for m, why in self.unranked],
            "rule": GROUP_RULE,
        }


GROUP_RULE = ("ranked by the harness's number; adjacent ranks tested on the questions both answered "
              "(McNemar exact for pass/fail, Wilcoxon signed-rank for scores, cluster-robust paired t "
              "where questions are clustered), Benjamini–Hochberg across the ladder; a new group starts "
              "below a step with q ≤ 0.05")


def _number(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def leaderboard(con, dataset: str, models=None, domains=None, split: str = q.MAIN_SPLIT,
                thresholds: dict[str, float] | None = None, accuracy=None) -> Ladder:
    """The ladder of `dataset` (`accuracy`: its `model_accuracy` rows, when the caller has them)."""
    acc = accuracy if accuracy is not None else model_accuracy(
        con, models, [dataset], domains, split=split, thresholds=thresholds)
    rows = [r for r in acc.iter_rows(named=True) if r["dataset"] == dataset]
    ranked = [r for r in rows if r["headline"] is not None and not math.isnan(r["headline"])]
    unranked = [(r["model"], r["headline_note"] or "no harness's number") for r in rows if r not in ranked]
    if not ranked:
        return Ladder(dataset, None, None, False, unranked=unranked)
    lower = bool(ranked[0]["lower_is_better"])
    ranked.sort(key=lambda r: (r["headline"] if lower else -r["headline"], r["model"]))
    first = ranked[0]
    scored = first["headline_kind"] == "mean score"
    clustered = dataset in q.clustered_datasets(con, [dataset])
    steps = _steps(con, ranked, dataset, domains, split, thresholds, scored, clustered)
    tested = [i for i, s in enumerate(steps) if s.p is not None]
    qs = dict(zip(tested, t.bh([steps[i].p for i in tested])))
    steps = [Step(**{**asdict(s), "q": qs.get(i)}) for i, s in enumerate(steps)]
    rungs, group = [], 1
    for i, r in enumerate(ranked):
        if i and steps[i - 1].separates:
            group += 1
        rungs.append(Rung(model=r["model"], rank=i + 1, headline=r["headline"], low=r["headline_ci_low"],
                          high=r["headline_ci_high"], n=r["n"], group=group, text=headline_text(r)))
    return Ladder(dataset, first["headline_metric"] or first["metric"], first["headline_of"], lower,
                  bool(first["headline_as_rate"]), rungs, steps, unranked)


def _steps(con, ranked: list[dict], dataset: str, domains, split: str, thresholds, scored: bool,
           clustered: bool) -> list[Step]:
    """The adjacent tests of a ladder: the questions of every adjacent pair in one query, paired by
    id; a pair where some question is left unpaired by id (which the question text might pair, as
    `stats compare` does) and clustered datasets are tested pair by pair."""
    pairs = [(above["model"], below["model"]) for above, below in zip(ranked, ranked[1:])]
    if clustered:
        return [_step(con, a, b, dataset, domains, split, thresholds, scored, clustered) for a, b in pairs]
    answered = {r["model"]: r["n"] for r in ranked}
    rows = q.adjacent_pairs(con, dataset, pairs, domains, split=split, thresholds=thresholds or None)
    by_pair = {key: group for key, group in rows.group_by("a", "b")}
    out = []
    for a, b in pairs:
        group = by_pair.get((a, b))
        n = group.height if group is not None else 0
        if n < min(answered[a], answered[b]):
            out.append(_step(con, a, b, dataset, domains, split, thresholds, scored, clustered))
        elif scored:
            both = group.filter(group["a_score"].is_not_null() & group["b_score"].is_not_null())
            out.append(_score_step(a, b, (both["b_score"] - both["a_score"]).to_numpy()))
        else:
            a_only = int((~group["a_correct"] & group["b_correct"]).sum())
            b_only = int((group["a_correct"] & ~group["b_correct"]).sum())
            out.append(Step(a, b, n, "McNemar exact", t.mcnemar_exact(a_only, b_only),
                            mde=mcnemar_mde(n, (a_only + b_only) / n)))
    return out


def _score_step(a: str, b: str, diff) -> Step:
    """The Wilcoxon signed-rank test of B − A's paired scores, with the paired t's MDE."""
    import numpy as np

    if not len(diff):
        return Step(a, b, 0, None, None)
    p, _ = t.wilcoxon_signed_rank(diff)
    mde = paired_t_mde(len(diff), float(np.std(diff, ddof=1))) if len(diff) > 1 else None
    return Step(a, b, len(diff), "Wilcoxon signed-rank", p, mde=mde)


def _step(con, a: str, b: str, dataset: str, domains, split: str, thresholds, scored: bool, clustered: bool) -> Step:
    """The paired test of two adjacent models on one dataset."""
    if clustered:
        units = q.paired_units(con, a, b, [dataset], domains, split=split, thresholds=thresholds or None)
        test = paired_test(units, "score" if scored else "failures")
        if test is not None:
            return Step(a, b, test.n, "cluster-robust paired t", test.p, mde=test.mde, clusters=test.clusters)
        if units.is_empty():
            return Step(a, b, 0, None, None)
    if scored:
        pairs = q.paired_scores(con, a, b, [dataset], domains, split=split)
        return _score_step(a, b, (pairs["b_score"] - pairs["a_score"]).to_numpy())
    counts = q.pair_counts(con, a, b, None, [dataset], domains, split=split, thresholds=thresholds or None)
    n = int(counts["n"].sum()) if counts.height else 0
    if not n:
        return Step(a, b, 0, None, None)
    a_only = int(counts.filter(~counts["a_correct"] & counts["b_correct"])["n"].sum())
    b_only = int(counts.filter(counts["a_correct"] & ~counts["b_correct"])["n"].sum())
    return Step(a, b, n, "McNemar exact", t.mcnemar_exact(a_only, b_only),
                mde=mcnemar_mde(n, (a_only + b_only) / n))


def leaderboards(con, datasets=None, models=None, domains=None, split: str = q.MAIN_SPLIT,
                 thresholds: dict[str, float] | None = None) -> list[Ladder]:
    """One ladder per dataset (every dataset under the filters when `datasets` is None)."""
    acc = model_accuracy(con, models, datasets, domains, split=split, thresholds=thresholds)
    return [leaderboard(con, d, models, domains, split, thresholds, accuracy=acc.filter(acc["dataset"] == d))
            for d in sorted(set(acc["dataset"]))]


def ladder_lines(ladder: Ladder) -> list[str]:
    """The ladder as text: the ranks with their groups, then each adjacent test."""
    if not ladder.rungs:
        return [f"{ladder.dataset}: no model has a harness's number to rank"]
    out = [f"{ladder.dataset}: {ladder.headline_of or ladder.metric}"
           + (" (lower is better)" if ladder.lower_is_better else "")]
    for r in ladder.rungs:
        out.append(f"  {r.rank:>3}. [group {r.group}] {r.model}: {r.text}")
    for s in ladder.steps:
        if s.p is None:
            out.append(f"  {s.a} vs {s.b}: no question both answered, not tested")
            continue
        clusters = f", {fmt.plural(s.clusters, 'cluster')}" if s.clusters else ""
        out.append(f"  {s.a} vs {s.b}: {s.test} on {fmt.plural(s.n, 'question')}{clusters}, p = "
                   f"{fmt.p_value(s.p)}, q = {fmt.p_value(s.q)}"
                   + ("  → separates" if s.separates else ""))
    for m, why in ladder.unranked:
        out.append(f"  not ranked: {m} ({why})")
    return out
