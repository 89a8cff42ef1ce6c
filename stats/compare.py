"""Pairwise comparison of two models' failures: the numbers behind `stats compare` and /compare.

Definitions (DESIGN.md, Statistics): pairs are questions both models answered (latest outcome,
paired by id within the dataset, else by the hash of the question text);
McNemar exact on the discordant pairs overall and per category; Fisher exact on each category's
share of each model's classified failures, Benjamini–Hochberg over the categories that occur;
the ErrorMap paper's one-sided binomial check for parity.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import polars as pl

from store import FaultlineError
from store import queries as q
from store.analysis import NO_MODEL_ERROR

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
            "mcnemar": {"a_only_fail": self.a_only_fail, "b_only_fail": self.b_only_fail,
                        "p": self.p},
            "categories": [{k: _json_number(asdict(c)[k]) for k in keys} for c in self.categories],
        }


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

    # a failure found not to be the model's fault is no error type of it: not a category, not in the totals
    by = {(m, c): n for m, c, n in counts.select("model", "category", "count").iter_rows() if c != NO_MODEL_ERROR}
    a_total = sum(n for (m, _), n in by.items() if m == a)
    b_total = sum(n for (m, _), n in by.items() if m == b)
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
        categories=[CategoryResult(**r) for r in rows],
    )


def pairing(c: Comparison) -> str:
    """How the pairs were found, when any came from the question text rather than the id."""
    if not c.pairs_by_content:
        return ""
    return f" ({c.pairs_by_id} paired by id, {c.pairs_by_content} by question text)"


def verdict(c: Comparison) -> str:
    """One plain-language sentence on the overall paired result."""
    n = c.a_only_fail + c.b_only_fail
    head = (f"On {c.n_pairs} questions both answered{pairing(c)}, {c.a} fails where {c.b} passes "
            f"{c.a_only_fail} times, and {c.b} fails where {c.a} passes {c.b_only_fail} times")
    if c.n_pairs == 0:
        return f"{c.a} and {c.b} share no answered questions under these filters: nothing to compare."
    if not c.can_decide:
        return (f"{head}: only {n} discordant question(s), too few to tell the models apart "
                f"(p = {c.p:.3g}).")
    if c.p > t.ALPHA:
        return f"{head}: no significant difference (McNemar exact p = {c.p:.3g})."
    worse = c.a if c.a_only_fail > c.b_only_fail else c.b
    better = c.b if worse == c.a else c.a
    return f"{head}: {worse} fails significantly more often than {better} (McNemar exact p = {c.p:.3g})."


def regressions(c: Comparison) -> list[str]:
    """Why B is significantly worse than A: overall (McNemar) or in a category (Fisher, BH q)."""
    out = []
    if c.b_only_fail > c.a_only_fail and c.p < t.ALPHA:
        out.append(f"overall: {c.b} fails {c.b_only_fail} questions {c.a} passes, vs "
                   f"{c.a_only_fail} the other way (p = {c.p:.3g})")
    for r in c.categories:
        if r.b_share > r.a_share and r.q_bh < t.ALPHA:
            out.append(f"{r.category}: {r.b_count}/{c.b_total} of {c.b}'s failures vs "
                       f"{r.a_count}/{c.a_total} of {c.a}'s (q = {r.q_bh:.3g})")
    return out
