"""Pairwise comparison of two models' failures: the numbers behind `stats compare` and /compare.

Definitions (DESIGN.md, Statistics): pairs are questions both models answered (latest outcome,
paired by id within the dataset, else by the hash of the question text); McNemar exact on the
discordant pairs overall and per category; Fisher exact on each category's share of each model's
classified failures **on those pairs** (so a difference cannot come from which datasets each
model ran; `unpaired=True` counts every failure instead, and `mix` says where they lie),
Benjamini–Hochberg over the categories that occur; the ErrorMap paper's one-sided binomial check
for parity. The same per dataset (`by_dataset`), where a continuous metric also gets the
Wilcoxon signed-rank test of the score differences, a seeded paired bootstrap interval of their
mean, and the failures and paired result at 0.5, 0.7 and 0.9 of the metric's range.

Only error types are tested. The labels that are not a model's error type
(`taxonomy.NOT_ERROR_TYPES`: Other, Hard to Analyze, No Model Error, Environment Failure) are counted apart
(`Comparison.not_error_types`, `"not_error_types"` in the JSON): they are left out of the shares'
denominators, of Benjamini–Hochberg and of every test, so "Hard to Analyze 92% vs 100%" is never
presented as a difference between the models.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import polars as pl

from core import significance as t
from store import FaultlineError
from store import queries as q
from taxonomy.catalog import NOT_ERROR_TYPES

from . import fmt
from .clusters import ClusteredTest, paired_test


@dataclass(frozen=True)
class CategoryResult:
    category: str
    a_count: int
    b_count: int
    a_share: float
    b_share: float
    p_fisher: float
    q_bh: float
    p_paired: float
    p_errormap: float | None
    # paired discordant counts behind p_paired: A fails with this category where B passes, and back
    a_only_fail: int
    b_only_fail: int
    delta: float
    delta_low: float
    delta_high: float
    fisher_can_decide: bool
    paired_can_decide: bool
    # B − A in the shares corrected for the analyst's measured misclassification (stats/shares.py;
    # of all failures under the filters) with its 95% interval; None when no people's label measured it
    corrected_delta: float | None = None
    corrected_low: float | None = None
    corrected_high: float | None = None

    @property
    def within_confusion(self) -> bool:
        """The corrected difference's interval holds 0: the analyst's measured error could make it."""
        return self.corrected_low is not None and self.corrected_low <= 0 <= self.corrected_high

    @property
    def significant(self) -> bool:
        """Benjamini–Hochberg q ≤ ALPHA, and — where people's labels measured the analyst — a
        corrected difference whose interval leaves out 0: the one rule the chart, the table and
        the CLI mark."""
        return self.q_bh <= t.ALPHA and not self.within_confusion

    @property
    def finding(self) -> str:
        """The test's answer in words; the compare page colours the chart and the table by it."""
        if self.significant:
            return "larger in B" if self.b_share > self.a_share else "larger in A"
        if self.q_bh <= t.ALPHA:
            return "within the analyst's error"
        return "not significant" if self.fisher_can_decide else "too few to tell"


@dataclass(frozen=True)
class LabelCount:
    """A label that is not an error type: counted for both models, never tested. Shares are of
    each model's labelled failures (error types and these labels together)."""

    category: str
    a_count: int
    b_count: int
    a_share: float
    b_share: float


@dataclass(frozen=True)
class ScoreTest:
    """Continuous scores on the questions both models answered, in one dataset: B − A."""

    metric: str
    scale_min: float
    scale_max: float
    lower_is_better: bool
    n: int
    a_mean: float
    b_mean: float
    mean_difference: float  # mean of (B's score − A's score)
    bootstrap_ci_low: float
    bootstrap_ci_high: float
    wilcoxon_p: float
    wilcoxon_n: int  # the non-zero differences the test ranks
    # the smallest mean difference a paired test detects with 80% power at α = 0.05 (core/power.py)
    mde: float | None = None
    # Benjamini–Hochberg over the Wilcoxon tests of the comparison's continuous datasets
    wilcoxon_q: float | None = None
    # where the questions are clustered (stats/clusters.py): the cluster-robust paired t of the
    # mean score difference, the test that counts there (the Wilcoxon takes questions as independent)
    clustered: ClusteredTest | None = None
    # Benjamini–Hochberg over the comparison's scored datasets, of the test in use on each (`p`)
    q: float | None = None
    bootstrap_seed: int = t.BOOTSTRAP_SEED
    bootstrap_replicates: int = t.BOOTSTRAP_REPLICATES
    zero_method: str = "wilcox"  # zero differences dropped

    @property
    def p(self) -> float:
        """The p of the scores' test in use: the cluster-robust paired t where the questions are
        clustered, else the Wilcoxon."""
        return self.clustered.p if self.clustered else self.wilcoxon_p

    @property
    def test(self) -> str:
        return CLUSTERED_TEST if self.clustered else "Wilcoxon signed-rank"


@dataclass(frozen=True)
class Sensitivity:
    """The paired result if the analysis threshold sat at `share` of the metric's range."""

    share: float | None  # None: the line in use, when it is none of the shares
    line: float
    a_failures: int
    b_failures: int
    a_only_fail: int
    b_only_fail: int
    p: float


class _PairedTest:
    """The paired test of a comparison or one of its datasets: McNemar exact, or where the
    questions are clustered (`clustered`) the cluster-robust paired t."""

    clustered: ClusteredTest | None

    @property
    def test(self) -> str:
        return CLUSTERED_TEST if self.clustered else "McNemar exact"

    @property
    def clusters(self) -> int | None:
        return self.clustered.clusters if self.clustered else None


@dataclass(frozen=True)
class DatasetComparison(_PairedTest):
    """The comparison within one dataset (scales and difficulty differ between datasets)."""

    dataset: str
    n_pairs: int
    a_only_fail: int
    b_only_fail: int
    p: float
    a_total: int
    b_total: int
    categories: list[CategoryResult] = field(default_factory=list)
    scores: ScoreTest | None = None
    sensitivity: list[Sensitivity] = field(default_factory=list)
    # Benjamini–Hochberg over the McNemar tests of every dataset of the comparison, and the
    # smallest difference in failure rates this dataset's test detects with 80% power
    q: float | None = None
    mde: float | None = None
    # where the questions are clustered: the cluster-robust paired test of the failure rates, whose
    # p and mde are `p` and `mde` (McNemar's discordant counts stay, of each question's first trial)
    clustered: ClusteredTest | None = None

    def to_json(self) -> dict:
        return {
            "dataset": self.dataset, "n_pairs": self.n_pairs,
            "mcnemar": {"a_only_fail": self.a_only_fail, "b_only_fail": self.b_only_fail, "p": self.p,
                        "q": self.q, "mde": self.mde, "test": self.test, "clusters": self.clusters,
                        "clustered": self.clustered.to_json() if self.clustered else None},
            "a_total": self.a_total, "b_total": self.b_total,
            "categories": [_category_json(c, self.n_pairs) for c in self.categories],
            "scores": None if self.scores is None else _score_json(self.scores),
            "sensitivity": [{k: _json_number(v) for k, v in asdict(x).items()} for x in self.sensitivity],
        }


@dataclass(frozen=True)
class MixRow:
    """Where each model's labelled failures lie: all of them, and those on paired questions."""

    dataset: str
    a_failures: int
    b_failures: int
    a_paired: int
    b_paired: int


CLUSTERED_TEST = "cluster-robust paired t"


def _score_json(sc: ScoreTest) -> dict:
    out = {k: _json_number(getattr(sc, k)) for k in ScoreTest.__dataclass_fields__ if k != "clustered"}
    return {**out, "test": sc.test, "p": sc.p, "clusters": sc.clustered.clusters if sc.clustered else None,
            "clustered": sc.clustered.to_json() if sc.clustered else None}


_CATEGORY_KEYS = ("category", "a_count", "b_count", "a_share", "b_share", "p_fisher", "q_bh",
                  "p_paired", "p_errormap", "corrected_delta", "corrected_low", "corrected_high")


def _category_json(c: CategoryResult, n_pairs: int) -> dict:
    """A category's row: its tests, and for its paired McNemar (`p_paired`) the smallest difference
    it could detect (`paired_mde`, a share of the `n_pairs` questions both answered) and its
    clusters (null: the type's failures are tested question by question)."""
    values = asdict(c)
    discordant = c.a_only_fail + c.b_only_fail
    return {**{k: _json_number(values[k]) for k in _CATEGORY_KEYS}, "finding": c.finding,
            "paired_mde": _mde(n_pairs, discordant) if discordant else None, "clusters": None}


@dataclass(frozen=True)
class Comparison(_PairedTest):
    a: str
    b: str
    analyst: str | None
    datasets: list[str]
    domains: list[str]
    split: str
    n_pairs: int
    pairs_by_id: int
    pairs_by_content: int
    a_only_fail: int
    b_only_fail: int
    p: float
    a_total: int
    b_total: int
    weaker: str
    categories: list[CategoryResult] = field(default_factory=list)
    # labels that are not error types (NOT_ERROR_TYPES), counted apart and never tested
    not_error_types: list[LabelCount] = field(default_factory=list)
    # every labelled failure: a_total (those with an error type) plus the labels above
    a_labelled: int = 0
    b_labelled: int = 0
    # error types counted on the questions both answered (the default), or on every failure
    unpaired: bool = False
    by_dataset: list[DatasetComparison] = field(default_factory=list)
    mix: list[MixRow] = field(default_factory=list)
    thresholds: dict[str, float] = field(default_factory=dict)
    # each model's error-type shares with their error (stats.signatures: every failure under the
    # filters, corrected where people's labels measured the analyst); None without an analyst
    shares: pl.DataFrame | None = None
    shares_method: str | None = None
    # the smallest difference in failure rates (B − A, a share of the paired questions) the
    # McNemar test detects with 80% power at α = 0.05 given the observed discordance
    mde: float | None = None
    # where some dataset's questions are clustered: the cluster-robust paired test over every paired
    # question (clusters within datasets), whose p and mde are `p` and `mde`
    clustered: ClusteredTest | None = None

    @property
    def mixes_differ(self) -> bool:
        """Whether some labelled failure of either model lies off the questions both answered
        (a dataset or question the other model did not answer)."""
        return any(m.a_failures != m.a_paired or m.b_failures != m.b_paired for m in self.mix)

    @property
    def can_decide(self) -> bool:
        if self.clustered:
            return self.clustered.clusters >= 2 and self.clustered.result.se > 0
        return t.mcnemar_can_decide(self.a_only_fail + self.b_only_fail)

    def categories_frame(self) -> pl.DataFrame:
        """One row per category, every field of CategoryResult, in effect order."""
        schema = {f: pl.Float64 for f in ("a_share", "b_share", "p_fisher", "q_bh", "p_paired",
                                          "p_errormap", "delta", "delta_low", "delta_high")}
        return pl.DataFrame([asdict(c) for c in self.categories], schema_overrides=schema,
                            infer_schema_length=None)

    def to_json(self) -> dict:
        """The documented `stats compare --json` shape (plus the analyst, filters, totals, the
        per-dataset comparisons and where the failures lie)."""
        return {
            "a": self.a,
            "b": self.b,
            "analyst": self.analyst,
            "datasets": self.datasets,
            "domains": self.domains,
            "split": self.split,
            "n_pairs": self.n_pairs,
            "pairs": {"by_id": self.pairs_by_id, "by_content": self.pairs_by_content},
            "a_total": self.a_total,
            "b_total": self.b_total,
            "a_labelled": self.a_labelled,
            "b_labelled": self.b_labelled,
            "mcnemar": {"a_only_fail": self.a_only_fail, "b_only_fail": self.b_only_fail,
                        "p": self.p, "mde": self.mde, "test": self.test, "clusters": self.clusters,
                        "clustered": self.clustered.to_json() if self.clustered else None},
            "categories": [_category_json(c, self.n_pairs) for c in self.categories],
            "not_error_types": [{k: _json_number(v) for k, v in asdict(c).items()}
                                for c in self.not_error_types],
            "error_types_on": "all failures" if self.unpaired else "paired questions",
            "thresholds": dict(sorted(self.thresholds.items())),
            "mix": [asdict(m) for m in self.mix],
            "mixes_differ": self.mixes_differ,
            "by_dataset": [d.to_json() for d in self.by_dataset],
            "shares_method": self.shares_method,
            "shares": [] if self.shares is None else [
                {k: _json_number(v) for k, v in r.items()} for r in self.shares.select(
                    "model", "category", "share", "share_low", "share_high").to_dicts()],
        }

    def not_error_frame(self) -> pl.DataFrame:
        """The labels that are not error types, one row each (category, counts, shares)."""
        schema = {"category": pl.String, "a_count": pl.Int64, "b_count": pl.Int64,
                  "a_share": pl.Float64, "b_share": pl.Float64}
        return pl.DataFrame([asdict(c) for c in self.not_error_types], schema=schema)


def _json_number(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def pick_analyst(con, analyst: str | None, models=None, datasets=None, domains=None,
                 split: str = q.MAIN_SPLIT) -> str | None:
    """The requested analyst (checked to exist) or the one with the most analyses; None if none."""
    if analyst is not None and q.has_analyst(con, analyst):
        return analyst
    known = q.analysts(con, models, datasets, domains, split=split)["analyst"].to_list()
    if analyst is None:
        return known[0] if known else None
    listing = ", ".join(known) if known else "none yet (run `python -m taxonomy analyze`)"
    raise FaultlineError(f"unknown analyst {analyst!r}; analysts with results: {listing}")


def check_known(con, models=(), datasets=(), domains=(), split: str = q.MAIN_SPLIT) -> None:
    """Raise a FaultlineError naming the known values when a model, dataset, domain or split is
    unknown."""
    known = q.filter_options(con)
    if split not in (q.MAIN_SPLIT, q.ALL_SPLITS, *known["splits"]):
        listing = ", ".join([q.MAIN_SPLIT, q.ALL_SPLITS, *known["splits"]])
        raise FaultlineError(f"unknown split {split!r}; choose one of: {listing}")
    for kind, asked in (("model", models), ("dataset", datasets), ("domain", domains)):
        for value in asked or ():
            if value not in known[kind + "s"]:
                listing = ", ".join(known[kind + "s"]) or "none (load logs with `python -m ingest PATH`)"
                raise FaultlineError(f"unknown {kind} {value!r}; known {kind}s: {listing}")


def compare(con, a: str, b: str, datasets=None, domains=None, analyst: str | None = None,
            split: str = q.MAIN_SPLIT, thresholds: dict[str, float] | None = None,
            unpaired: bool = False, types_by_dataset: bool = True) -> Comparison:
    """Compare model A with model B on the questions both answered (`thresholds`: the
    analyst's lines for continuous datasets, as checked by `stats.headline.usable_thresholds`).
    `types_by_dataset=False` leaves the error-type tests out of `by_dataset` (McNemar and the
    score tests stay): a page that shows one dataset's at a time asks for that dataset alone,
    since 18 categories × 30 datasets of Fisher tests cost seconds."""
    from .headline import dataset_rules, usable_thresholds

    datasets, domains = list(datasets or []), list(domains or [])
    check_known(con, [a, b], datasets, domains, split)
    if a == b:
        raise FaultlineError(f"compare two different models (both are {a!r})")
    rules = dataset_rules(con, datasets or None)
    thresholds, _ = usable_thresholds(rules, thresholds)
    analyst = pick_analyst(con, analyst, [a, b], datasets, domains, split)
    paired = q.pair_counts(con, a, b, analyst, datasets, domains, split=split, thresholds=thresholds or None)
    empty = pl.DataFrame(schema={"model": pl.String, "dataset": pl.String, "category": pl.String,
                                 "count": pl.Int64})
    everywhere = (q.category_counts(con, analyst, [a, b], datasets, domains, split=split,
                                    thresholds=thresholds or None) if analyst else empty)
    continuous = {d: r for d, r in rules.items() if r.movable and d in set(paired["dataset"])}
    scores = (q.paired_scores(con, a, b, sorted(continuous), domains, split=split) if continuous
              else pl.DataFrame(schema={"dataset": pl.String, "a_score": pl.Float64, "b_score": pl.Float64}))
    clustered = sorted(q.clustered_datasets(con, sorted(set(paired["dataset"]))) if paired.height else [])
    units = q.paired_units(con, a, b, clustered, domains, split=split, thresholds=thresholds or None) if clustered else None
    result = compare_frames(a, b, analyst, datasets, domains, paired, everywhere, split,
                            unpaired=unpaired, scores=scores, rules=continuous, thresholds=thresholds,
                            types_by_dataset=types_by_dataset, units=units)
    return with_corrected_shares(con, result) if analyst else result


def with_corrected_shares(con, c: Comparison) -> Comparison:
    """`c` with each model's corrected shares and, per error type, the corrected B − A: a
    difference the tests find counts only when its corrected interval leaves out 0."""
    from .shares import difference
    from .signatures import share_rows, shares

    est = shares(con, c.analyst, [c.a, c.b], c.datasets or None, c.domains or None, split=c.split,
                 thresholds=c.thresholds or None)
    categories = c.categories
    if est.corrected:
        categories = []
        for r in c.categories:
            d = difference(est, (c.a,), (c.b,), r.category)
            categories.append(r if d is None else replace(r, corrected_delta=d[0], corrected_low=d[1],
                                                          corrected_high=d[2]))
    return replace(c, categories=categories, shares=share_rows(est), shares_method=est.method)


def _paired_labels(paired: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """Each model's labelled failures on the paired questions, per dataset and category."""
    side = []
    for model, correct, category in ((a, "a_correct", "a_category"), (b, "b_correct", "b_category")):
        side.append(paired.filter(~pl.col(correct) & pl.col(category).is_not_null())
                    .group_by("dataset", category).agg(count=pl.col("n").sum())
                    .select(pl.lit(model).alias("model"), "dataset", pl.col(category).alias("category"),
                            pl.col("count").cast(pl.Int64)))
    return pl.concat(side)


def _error_types(a: str, b: str, labels: dict, paired: pl.DataFrame) -> dict:
    """The per-category tests for one set of labelled failures (`labels`: {(model, category):
    count}) and the pairs they were found on (for the paired McNemar per category)."""
    def total(frame: pl.DataFrame) -> int:
        return int(frame["n"].sum())

    a_fail_b_pass = paired.filter(~pl.col("a_correct") & pl.col("b_correct"))
    b_fail_a_pass = paired.filter(pl.col("a_correct") & ~pl.col("b_correct"))
    a_only, b_only = total(a_fail_b_pass), total(b_fail_a_pass)
    a_labelled = sum(n for (m, _), n in labels.items() if m == a)
    b_labelled = sum(n for (m, _), n in labels.items() if m == b)
    # only error types are compared: their shares are of the failures that have one
    by = {k: n for k, n in labels.items() if k[1] not in NOT_ERROR_TYPES}
    a_total = sum(n for (m, _), n in by.items() if m == a)
    b_total = sum(n for (m, _), n in by.items() if m == b)
    not_errors = [
        LabelCount(c, labels.get((a, c), 0), labels.get((b, c), 0),
                   labels.get((a, c), 0) / a_labelled if a_labelled else math.nan,
                   labels.get((b, c), 0) / b_labelled if b_labelled else math.nan)
        for c in NOT_ERROR_TYPES if (a, c) in labels or (b, c) in labels]
    paired_a = dict(a_fail_b_pass.group_by("a_category").agg(pl.col("n").sum()).iter_rows())
    paired_b = dict(b_fail_a_pass.group_by("b_category").agg(pl.col("n").sum()).iter_rows())

    # the weaker model fails more of the shared questions; ties go by analysed failures, then to B
    weaker = a if (a_only, a_total) > (b_only, b_total) else b

    rows = []
    for c in sorted({c for (_, c) in by}):
        ac, bc = by.get((a, c), 0), by.get((b, c), 0)
        pa, pb = paired_a.get(c, 0), paired_b.get(c, 0)
        if weaker == a:
            weak, weak_total, strong_share = ac, a_total, bc / b_total if b_total else None
        else:
            weak, weak_total, strong_share = bc, b_total, ac / a_total if a_total else None
        if strong_share == 0:
            # a binomial with rate 0 makes any count > 0 impossible (p = 0): the paper's check
            # says nothing there, so it is left undefined rather than printed as a finding
            strong_share = None
        d, lo, hi = t.share_difference_ci(bc, b_total, ac, a_total)
        rows.append(dict(
            category=c, a_count=ac, b_count=bc,
            a_share=ac / a_total if a_total else math.nan,
            b_share=bc / b_total if b_total else math.nan,
            p_fisher=t.fisher(ac, a_total, bc, b_total),
            p_paired=t.mcnemar_exact(pa, pb),
            p_errormap=None if strong_share is None else t.errormap_check(weak, weak_total, strong_share),
            a_only_fail=pa, b_only_fail=pb, delta=d, delta_low=lo, delta_high=hi,
            fisher_can_decide=t.fisher_can_decide(ac, a_total, bc, b_total),
            paired_can_decide=t.mcnemar_can_decide(pa + pb),
        ))
    for row, qv in zip(rows, t.bh([r["p_fisher"] for r in rows])):
        row["q_bh"] = qv
    rows.sort(key=lambda r: (-abs(r["delta"]) if not math.isnan(r["delta"]) else 0, r["category"]))
    return dict(a_only=a_only, b_only=b_only, n_pairs=total(paired), a_total=a_total, b_total=b_total,
                a_labelled=a_labelled, b_labelled=b_labelled, weaker=weaker, not_errors=not_errors,
                categories=[CategoryResult(**r) for r in rows])


def _labels(frame: pl.DataFrame) -> dict:
    counts: dict = {}
    for m, c, n in frame.select("model", "category", "count").iter_rows():
        counts[(m, c)] = counts.get((m, c), 0) + n
    return counts


def compare_frames(a, b, analyst, datasets, domains, paired: pl.DataFrame, everywhere: pl.DataFrame,
                   split: str, unpaired: bool = False, scores: pl.DataFrame | None = None,
                   rules: dict | None = None, thresholds: dict[str, float] | None = None,
                   types_by_dataset: bool = True, units: pl.DataFrame | None = None) -> Comparison:
    """The statistics, from the pair counts (`store.queries.pair_counts`: per dataset), every
    labelled failure of the two models per dataset and category (`everywhere`), the paired
    scores of the continuous datasets (`rules`: their `stats.headline.DatasetRule`), and the
    questions of the datasets whose questions are clustered, with every trial
    (`store.queries.paired_units`): there the paired tests are cluster-robust."""
    on_pairs = _paired_labels(paired, a, b)
    pooled = _error_types(a, b, _labels(everywhere if unpaired else on_pairs), paired)
    by_dataset = []
    for dataset in sorted(set(paired["dataset"])):
        mine = paired.filter(pl.col("dataset") == dataset)
        part = _error_types(a, b, _labels(on_pairs.filter(pl.col("dataset") == dataset)) if types_by_dataset
                            else {}, mine)
        rule = (rules or {}).get(dataset)
        pairs = scores.filter(pl.col("dataset") == dataset) if rule is not None and scores is not None else None
        score_test, strip = (None, []) if pairs is None or pairs.is_empty() else _scores(
            pairs, rule, (thresholds or {}).get(dataset, rule.stored))
        mine_units = units.filter(pl.col("dataset") == dataset) if units is not None else None
        clustered = paired_test(mine_units, "failures") if mine_units is not None else None
        if score_test is not None and mine_units is not None:
            score_test = replace(score_test, clustered=paired_test(mine_units, "score"))
        by_dataset.append(DatasetComparison(
            dataset=dataset, n_pairs=part["n_pairs"], a_only_fail=part["a_only"], b_only_fail=part["b_only"],
            p=clustered.p if clustered else t.mcnemar_exact(part["a_only"], part["b_only"]), a_total=part["a_total"],
            b_total=part["b_total"], categories=part["categories"], scores=score_test, sensitivity=strip,
            mde=clustered.mde if clustered else _mde(part["n_pairs"], part["a_only"] + part["b_only"]),
            clustered=clustered))
    by_dataset = _across_datasets(by_dataset)
    overall = _overall_clustered(paired, units) if any(d.clustered for d in by_dataset) else None
    return Comparison(
        a=a, b=b, analyst=analyst, datasets=list(datasets), domains=list(domains), split=split,
        n_pairs=pooled["n_pairs"],
        pairs_by_id=int(paired.filter(pl.col("paired_by") == "id")["n"].sum()),
        pairs_by_content=int(paired.filter(pl.col("paired_by") == "content")["n"].sum()),
        a_only_fail=pooled["a_only"], b_only_fail=pooled["b_only"],
        p=overall.p if overall else t.mcnemar_exact(pooled["a_only"], pooled["b_only"]), a_total=pooled["a_total"],
        b_total=pooled["b_total"], weaker=pooled["weaker"], categories=pooled["categories"],
        not_error_types=pooled["not_errors"], a_labelled=pooled["a_labelled"],
        b_labelled=pooled["b_labelled"], unpaired=unpaired, by_dataset=by_dataset,
        mix=_mix(a, b, everywhere, on_pairs), thresholds=dict(thresholds or {}),
        mde=overall.mde if overall else _mde(pooled["n_pairs"], pooled["a_only"] + pooled["b_only"]),
        clustered=overall,
    )


def _overall_clustered(paired: pl.DataFrame, units: pl.DataFrame):
    """The cluster-robust paired test over every paired question: the clustered datasets' questions
    with their trials and clusters, every other question its own cluster of one trial (its
    failure difference from the pair counts)."""
    import numpy as np

    rest = paired.filter(~pl.col("dataset").is_in(sorted(set(units["dataset"]))))
    counts = rest["n"].to_numpy()
    n = int(counts.sum())
    singles = pl.DataFrame({
        "dataset": ["(others)"] * n,
        "instance_id": [str(i) for i in range(n)],
        "a_trials": np.ones(n, dtype=np.int64), "b_trials": np.ones(n, dtype=np.int64),
        "a_pass": np.repeat(rest["a_correct"].cast(pl.Float64).to_numpy(), counts),
        "b_pass": np.repeat(rest["b_correct"].cast(pl.Float64).to_numpy(), counts),
        "cluster": [None] * n,
    }, schema={"dataset": pl.String, "instance_id": pl.String, "a_trials": pl.Int64, "b_trials": pl.Int64,
               "a_pass": pl.Float64, "b_pass": pl.Float64, "cluster": pl.String})
    own = units.select(pl.col("dataset"), (pl.col("dataset") + "\x1f" + pl.col("instance_id")).alias("instance_id"),
                       pl.col("a_trials").cast(pl.Int64), pl.col("b_trials").cast(pl.Int64),
                       pl.col("a_pass").cast(pl.Float64), pl.col("b_pass").cast(pl.Float64),
                       (pl.col("dataset") + "\x1f" + pl.col("cluster")).alias("cluster"))
    return paired_test(pl.concat([own, singles]), "failures")


def _mde(n_pairs: int, discordant: int) -> float | None:
    from core.power import mcnemar_mde

    return mcnemar_mde(n_pairs, discordant / n_pairs) if n_pairs else None


def _across_datasets(parts: list[DatasetComparison]) -> list[DatasetComparison]:
    """Each dataset's McNemar q, and each continuous dataset's Wilcoxon q: Benjamini–Hochberg over
    the datasets of the comparison (one family per test)."""
    if not parts:
        return parts
    qs = t.bh([d.p for d in parts])
    scored = [i for i, d in enumerate(parts) if d.scores is not None]
    wq = dict(zip(scored, t.bh([parts[i].scores.wilcoxon_p for i in scored])))
    sq = dict(zip(scored, t.bh([parts[i].scores.p for i in scored])))
    return [replace(d, q=qv, scores=None if d.scores is None else replace(d.scores, wilcoxon_q=wq[i], q=sq[i]))
            for i, (d, qv) in enumerate(zip(parts, qs))]


def _mix(a: str, b: str, everywhere: pl.DataFrame, on_pairs: pl.DataFrame) -> list[MixRow]:
    """Per dataset, each model's labelled failures in all and on the paired questions."""
    def per(frame: pl.DataFrame, model: str) -> dict:
        return dict(frame.filter(pl.col("model") == model).group_by("dataset")
                    .agg(pl.col("count").sum()).iter_rows())

    every_a, every_b, pair_a, pair_b = per(everywhere, a), per(everywhere, b), per(on_pairs, a), per(on_pairs, b)
    return [MixRow(d, every_a.get(d, 0), every_b.get(d, 0), pair_a.get(d, 0), pair_b.get(d, 0))
            for d in sorted(set(every_a) | set(every_b))]


def _scores(frame: pl.DataFrame, rule, line: float | None) -> tuple[ScoreTest, list[Sensitivity]]:
    """Wilcoxon, the paired bootstrap and the sensitivity strip for one dataset's paired scores."""
    import numpy as np

    from .headline import SENSITIVITY

    a_scores = frame["a_score"].to_numpy()
    b_scores = frame["b_score"].to_numpy()
    diff = b_scores - a_scores
    mean, low, high = t.paired_bootstrap(diff)
    p, ranked = t.wilcoxon_signed_rank(diff)
    from core.power import paired_t_mde

    test = ScoreTest(metric=rule.metric, scale_min=rule.low, scale_max=rule.high,
                     lower_is_better=rule.lower_is_better, n=len(diff), a_mean=float(a_scores.mean()),
                     b_mean=float(b_scores.mean()), mean_difference=mean, bootstrap_ci_low=low,
                     bootstrap_ci_high=high, wilcoxon_p=p, wilcoxon_n=ranked,
                     mde=paired_t_mde(len(diff), float(diff.std(ddof=1))) if len(diff) > 1 else None)
    lines = [(share, rule.line(share)) for share in SENSITIVITY]
    if line is not None and not any(math.isclose(line, v, abs_tol=1e-9) for _, v in lines):
        lines.append((None, line))
    strip = []
    for share, value in sorted(lines, key=lambda x: x[1]):
        a_fail = a_scores > value if rule.lower_is_better else a_scores < value
        b_fail = b_scores > value if rule.lower_is_better else b_scores < value
        a_only, b_only = int(np.sum(a_fail & ~b_fail)), int(np.sum(b_fail & ~a_fail))
        strip.append(Sensitivity(share=share, line=value, a_failures=int(a_fail.sum()),
                                 b_failures=int(b_fail.sum()), a_only_fail=a_only, b_only_fail=b_only,
                                 p=t.mcnemar_exact(a_only, b_only)))
    return test, strip


def pairing(c: Comparison) -> str:
    """How the pairs were found, when any came from the question text rather than the id."""
    if not c.pairs_by_content:
        return ""
    return f" ({fmt.count(c.pairs_by_id)} paired by id, {fmt.count(c.pairs_by_content)} by question text)"


def test_text(c) -> str:
    """The paired test and its p, as every sentence cites it: "McNemar exact p = 0.03", or, on
    clustered questions, "cluster-robust paired t over 40 clusters, p = 0.03"."""
    if c.clustered:
        return f"{CLUSTERED_TEST} over {fmt.plural(c.clustered.clusters, 'cluster')}, p = {fmt.p_value(c.p)}"
    return f"McNemar exact p = {fmt.p_value(c.p)}"


def verdict(c: Comparison) -> str:
    """One plain-language sentence on the overall paired result."""
    n = c.a_only_fail + c.b_only_fail
    if c.n_pairs == 0:
        return f"{c.a} and {c.b} share no answered questions under these filters: nothing to compare."
    head = (f"On {fmt.plural(c.n_pairs, 'question')} both answered{pairing(c)}, {c.a} fails where "
            f"{c.b} passes {fmt.times(c.a_only_fail)}, and {c.b} fails where {c.a} passes "
            f"{fmt.times(c.b_only_fail)}")
    if c.clustered:
        head += (f" (first trials; the test weighs every trial, its questions clustered by "
                 f"{c.clustered.kind})")
    if n == 0 and not c.clustered:
        return f"{head}: they fail on the same questions, so the paired test has nothing to weigh."
    if not c.can_decide:
        return (f"{head}: only {fmt.plural(n, 'question')} where they differ, too few to tell the "
                f"models apart ({test_text(c)}).")
    if c.p > t.ALPHA:
        return f"{head}: no significant difference ({test_text(c)}){undetected(c.mde)}."
    if c.clustered:
        worse = c.b if c.clustered.result.mean > 0 else c.a
    else:
        worse = c.a if c.a_only_fail > c.b_only_fail else c.b
    better = c.b if worse == c.a else c.a
    return f"{head}: {worse} fails significantly more often than {better} ({test_text(c)})."


def undetected(mde: float | None, what: str = "in failure rate") -> str:
    """", and no difference of X or more detected": what a non-significant test could have seen."""
    if mde is None:
        return ""
    return f"; no difference of {fmt.pct(mde)} or more {what} detected (80% power at α = 0.05)"


def label_noise_line(result: Comparison) -> str:
    """How the per-type tests treat the analyst's error, in one sentence (the page and the CLI)."""
    if result.shares_method is None:
        return ""
    if any(c.corrected_delta is not None for c in result.categories):
        reviews = int(result.shares["reviews_used"].max()) if result.shares is not None and result.shares.height else 0
        return (f"Label noise: the analyst was measured on {fmt.plural(reviews, 'people' + chr(39) + 's label')}; "
                "a difference counts only where the shares corrected for its measured misclassification also "
                "differ (95% interval of the corrected B − A, over all failures under the filters, leaves out 0).")
    return ("Label noise: the analyst's accuracy is not measured, so these tests take its labels as true; "
            "review failures (`python -m taxonomy review-sample`) to correct for it.")


def mix_lines(result: Comparison) -> list[str]:
    """Where the two models' labelled failures lie, when some are off the paired questions."""
    if not result.mixes_differ:
        return []
    a_off = [(m.dataset, m.a_failures - m.a_paired) for m in result.mix if m.a_failures > m.a_paired]
    b_off = [(m.dataset, m.b_failures - m.b_paired) for m in result.mix if m.b_failures > m.b_paired]

    def where(off):
        return ", ".join(f"{d} {fmt.count(n)}" for d, n in off) or "none"

    a_all, b_all = sum(m.a_failures for m in result.mix), sum(m.b_failures for m in result.mix)
    a_paired, b_paired = sum(m.a_paired for m in result.mix), sum(m.b_paired for m in result.mix)
    counted = ("every failure is counted (--unpaired): differences may come from these datasets"
               if result.unpaired else "error types are compared on the paired questions only")
    return [f"the two models' labelled failures come from different question sets: A {fmt.count(a_paired)} "
            f"of {fmt.count(a_all)} on questions both answered (others: {where(a_off)}), B "
            f"{fmt.count(b_paired)} of {fmt.count(b_all)} (others: {where(b_off)}); {counted}"]


def mix_sentences(result: Comparison) -> list[str]:
    """`mix_lines` as sentences, for a page or the report (the terminal prints each after "note:")."""
    return [line[:1].upper() + line[1:] for line in mix_lines(result)]


def score_lines(d: DatasetComparison) -> list[str]:
    """A dataset's continuous-score tests and its sensitivity strip, as text."""
    if d.scores is None:
        return []
    sc = d.scores
    span = (sc.scale_min, sc.scale_max)
    out = [f"{sc.metric} (scale {fmt.span(*span)}{', lower is better' if sc.lower_is_better else ''}): "
           f"mean A {fmt.score(sc.a_mean, *span)}, B {fmt.score(sc.b_mean, *span)}, B − A "
           f"{fmt.signed_score(sc.mean_difference, *span)} (95% paired bootstrap "
           f"{fmt.score_interval(sc.bootstrap_ci_low, sc.bootstrap_ci_high, *span, signed=True)}, "
           f"{fmt.count(sc.bootstrap_replicates)} resamples, seed {sc.bootstrap_seed}); Wilcoxon signed-rank "
           f"p = {fmt.p_value(sc.wilcoxon_p)}"
           + (f" (q = {fmt.p_value(sc.wilcoxon_q)} over the continuous datasets)" if sc.wilcoxon_q is not None else "")
           + f" on {fmt.plural(sc.wilcoxon_n, 'non-zero difference')} (zero differences dropped)"
           + (f"; the smallest mean difference detectable with 80% power is {fmt.score(sc.mde, *span)} "
              "(paired t, a stand-in for the Wilcoxon)" if sc.mde is not None else "")]
    if sc.clustered:
        r = sc.clustered.result
        out.append(f"questions clustered ({sc.clustered.kind}): {CLUSTERED_TEST} over "
                   f"{fmt.plural(sc.clustered.clusters, 'cluster')}, B − A {fmt.signed_score(r.mean, *span)} (95% "
                   f"{fmt.score_interval(r.low, r.high, *span, signed=True)}), p = {fmt.p_value(r.p)} — the test "
                   "that counts here: the Wilcoxon and the bootstrap take the questions as independent")
    for x in d.sensitivity:
        at = f"{x.share:g} of the range" if x.share is not None else "the line in use"
        out.append(f"failures at {fmt.number(x.line)} ({at}): A {fmt.count(x.a_failures)}, B "
                   f"{fmt.count(x.b_failures)}; only A {fmt.count(x.a_only_fail)}, only B "
                   f"{fmt.count(x.b_only_fail)}, McNemar p = {fmt.p_value(x.p)}")
    return out


def regressions(c: Comparison) -> list[str]:
    """Why B is significantly worse than A: overall (McNemar) or in a category (Fisher, BH q)."""
    out = []
    if c.b_only_fail > c.a_only_fail and c.p < t.ALPHA:
        out.append(f"overall: {c.b} fails {fmt.plural(c.b_only_fail, 'question')} {c.a} passes, vs "
                   f"{fmt.count(c.a_only_fail)} the other way (p = {fmt.p_value(c.p)})")
    for r in c.categories:
        if r.b_share > r.a_share and r.q_bh < t.ALPHA:
            out.append(f"{r.category}: {fmt.count(r.b_count)}/{fmt.count(c.b_total)} of {c.b}'s "
                       f"failures with an error type vs {fmt.count(r.a_count)}/{fmt.count(c.a_total)} "
                       f"of {c.a}'s (q = {fmt.p_value(r.q_bh)})")
    return out
