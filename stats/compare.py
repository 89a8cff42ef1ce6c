"""Pairwise comparison of two models' failures: the numbers behind `stats compare` and /compare.

Definitions (DESIGN.md, Statistics): pairs are questions both models answered (latest outcome,
paired by id within the dataset, else by the hash of the question text);
McNemar exact on the discordant pairs overall and per category; Fisher exact on each category's
share of each model's classified failures, Benjamini–Hochberg over the categories that occur;
the ErrorMap paper's one-sided binomial check for parity.

Only error types are tested. The labels that are not a model's error type
(`taxonomy.NOT_ERROR_TYPES`: Other, Hard to Analyze, No Model Error, Environment Failure) are counted apart
(`Comparison.not_error_types`, `"not_error_types"` in the JSON): they are left out of the shares'
denominators, of Benjamini–Hochberg and of every test, so "Hard to Analyze 92% vs 100%" is never
presented as a difference between the models.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import polars as pl

from store import FaultlineError
from store import queries as q
from taxonomy.catalog import NOT_ERROR_TYPES

from . import fmt
from . import tests as t


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

    @property
    def significant(self) -> bool:
        """Benjamini–Hochberg q ≤ ALPHA: the one rule the chart, the table and the CLI mark."""
        return self.q_bh <= t.ALPHA

    @property
    def finding(self) -> str:
        """The test's answer in words; the compare page colours the chart and the table by it."""
        if self.significant:
            return "larger in B" if self.b_share > self.a_share else "larger in A"
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
class Comparison:
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

    @property
    def can_decide(self) -> bool:
        return t.mcnemar_can_decide(self.a_only_fail + self.b_only_fail)

    def categories_frame(self) -> pl.DataFrame:
        """One row per category, every field of CategoryResult, in effect order."""
        schema = {f: pl.Float64 for f in ("a_share", "b_share", "p_fisher", "q_bh", "p_paired",
                                          "p_errormap", "delta", "delta_low", "delta_high")}
        return pl.DataFrame([asdict(c) for c in self.categories], schema_overrides=schema,
                            infer_schema_length=None)

    def to_json(self) -> dict:
        """The documented `stats compare --json` shape (plus the analyst, filters and totals)."""
        keys = ("category", "a_count", "b_count", "a_share", "b_share", "p_fisher", "q_bh",
                "p_paired", "p_errormap")
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
                        "p": self.p},
            "categories": [{k: _json_number(asdict(c)[k]) for k in keys} for c in self.categories],
            "not_error_types": [{k: _json_number(v) for k, v in asdict(c).items()}
                                for c in self.not_error_types],
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
            split: str = q.MAIN_SPLIT) -> Comparison:
    """Compare model A with model B on the questions both answered."""
    datasets, domains = list(datasets or []), list(domains or [])
    check_known(con, [a, b], datasets, domains, split)
    if a == b:
        raise FaultlineError(f"compare two different models (both are {a!r})")
    analyst = pick_analyst(con, analyst, [a, b], datasets, domains, split)
    paired = q.pair_counts(con, a, b, analyst, datasets, domains, split=split)
    counts = (
        q.category_counts(con, analyst, [a, b], datasets, domains, split=split)
        if analyst else pl.DataFrame(schema={"model": pl.String, "category": pl.String, "count": pl.Int64})
    )
    return compare_frames(a, b, analyst, datasets, domains, paired, counts, split)


def compare_frames(a, b, analyst, datasets, domains, paired: pl.DataFrame,
                   counts: pl.DataFrame, split: str) -> Comparison:
    """The statistics, from the pair counts (`store.queries.pair_counts`) and the per-model
    category counts."""
    def total(frame: pl.DataFrame) -> int:
        return int(frame["n"].sum())

    a_fail_b_pass = paired.filter(~pl.col("a_correct") & pl.col("b_correct"))
    b_fail_a_pass = paired.filter(pl.col("a_correct") & ~pl.col("b_correct"))
    a_only, b_only = total(a_fail_b_pass), total(b_fail_a_pass)

    labels = {(m, c): n for m, c, n in counts.select("model", "category", "count").iter_rows()}
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

    cats = sorted({c for (_, c) in by})
    rows = []
    for c in cats:
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
    return Comparison(
        a=a, b=b, analyst=analyst, datasets=list(datasets), domains=list(domains), split=split,
        n_pairs=total(paired),
        pairs_by_id=total(paired.filter(pl.col("paired_by") == "id")),
        pairs_by_content=total(paired.filter(pl.col("paired_by") == "content")),
        a_only_fail=a_only, b_only_fail=b_only,
        p=t.mcnemar_exact(a_only, b_only), a_total=a_total, b_total=b_total, weaker=weaker,
        categories=[CategoryResult(**r) for r in rows], not_error_types=not_errors,
        a_labelled=a_labelled, b_labelled=b_labelled,
    )


def pairing(c: Comparison) -> str:
    """How the pairs were found, when any came from the question text rather than the id."""
    if not c.pairs_by_content:
        return ""
    return f" ({fmt.count(c.pairs_by_id)} paired by id, {fmt.count(c.pairs_by_content)} by question text)"


def verdict(c: Comparison) -> str:
    """One plain-language sentence on the overall paired result."""
    n = c.a_only_fail + c.b_only_fail
    if c.n_pairs == 0:
        return f"{c.a} and {c.b} share no answered questions under these filters: nothing to compare."
    head = (f"On {fmt.plural(c.n_pairs, 'question')} both answered{pairing(c)}, {c.a} fails where "
            f"{c.b} passes {fmt.times(c.a_only_fail)}, and {c.b} fails where {c.a} passes "
            f"{fmt.times(c.b_only_fail)}")
    if n == 0:
        return f"{head}: they fail on the same questions, so the paired test has nothing to weigh."
    if not c.can_decide:
        return (f"{head}: only {fmt.plural(n, 'question')} where they differ, too few to tell the "
                f"models apart (McNemar exact p = {fmt.p_value(c.p)}).")
    if c.p > t.ALPHA:
        return f"{head}: no significant difference (McNemar exact p = {fmt.p_value(c.p)})."
    worse = c.a if c.a_only_fail > c.b_only_fail else c.b
    better = c.b if worse == c.a else c.a
    return (f"{head}: {worse} fails significantly more often than {better} "
            f"(McNemar exact p = {fmt.p_value(c.p)}).")


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
