"""Two models' agent runs compared on the tasks both ran with a transcript (issue 25 item 5):
where each model's first decisive error falls (the step, its share of the run, early / middle /
late thirds) and which tools fail for each, with the tests that say whether a difference is more
than chance.

Positions are compared with a two-sided Mann–Whitney U test on the share of the run before the
first error (the failed transcripts of the two models are different sets of tasks, so the test is
unpaired; the pairing is in which tasks count). Tool error rates are compared per tool with Fisher's
exact test on errored vs clean results, Benjamini–Hochberg over the tools both used. Queries are in
store/transcripts.py and store/first_errors.py; this module adds only the statistics.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import polars as pl

from store import first_errors as fe, transcripts as tr

from . import tests as t

# fewer located first errors than this on either side: no test of where they fall
MIN_POSITIONS = 5


@dataclass(frozen=True)
class FirstErrors:
    """One model's first decisive errors on the paired tasks it failed."""

    model: str
    analysed: int  # failed, analysed transcripts on the paired tasks
    with_step: int  # of those, with a named step
    median_step: float | None
    median_share: float | None  # of the run's steps before the error
    mean_share: float | None
    early: int
    middle: int
    late: int


@dataclass(frozen=True)
class ToolRow:
    tool: str
    a_calls: int
    a_results: int
    a_errors: int
    b_calls: int
    b_results: int
    b_errors: int
    p_fisher: float | None  # None: one model never got a result from this tool
    q_bh: float | None

    @property
    def a_share(self) -> float | None:
        return self.a_errors / self.a_results if self.a_results else None

    @property
    def b_share(self) -> float | None:
        return self.b_errors / self.b_results if self.b_results else None


@dataclass(frozen=True)
class AgentComparison:
    a: str
    b: str
    analyst: str | None
    n_tasks: int  # tasks both models ran with a transcript
    first_errors: list[FirstErrors] = field(default_factory=list)
    share_p: float | None = None  # Mann–Whitney U on the shares; None: too few located errors
    tools: list[ToolRow] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "n_tasks": self.n_tasks,
            "analyst": self.analyst,
            "first_errors": [{k: _num(v) for k, v in asdict(f).items()} for f in self.first_errors],
            "first_error_share_p": _num(self.share_p),
            "first_error_share_test": f"Mann–Whitney U, two-sided; none below {MIN_POSITIONS} located errors a side",
            "tools": [{**{k: _num(v) for k, v in asdict(r).items()},
                       "a_error_share": _num(r.a_share), "b_error_share": _num(r.b_share)} for r in self.tools],
        }


def _num(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def first_errors_of(model: str, rows: pl.DataFrame) -> FirstErrors:
    mine = rows.filter(pl.col("model") == model)
    located = mine.filter(pl.col("step_index").is_not_null())

    def stat(expr):
        return None if located.is_empty() else located.select(expr).item()

    return FirstErrors(
        model=model, analysed=mine.height, with_step=located.height,
        median_step=stat(pl.col("step_index").median()), median_share=stat(pl.col("share").median()),
        mean_share=stat(pl.col("share").mean()),
        **{p: int((located["position"] == p).sum()) for p in fe.POSITIONS})


def share_test(rows: pl.DataFrame, a: str, b: str) -> float | None:
    """Mann–Whitney U p (two-sided) on the share of the run before the first error, A vs B; None
    when either side has fewer than MIN_POSITIONS located errors."""
    from scipy.stats import mannwhitneyu

    shares = [rows.filter((pl.col("model") == m) & pl.col("share").is_not_null())["share"].to_list() for m in (a, b)]
    if min(len(s) for s in shares) < MIN_POSITIONS:
        return None
    return float(mannwhitneyu(shares[0], shares[1], alternative="two-sided").pvalue)


def tool_rows(use: pl.DataFrame, a: str, b: str) -> list[ToolRow]:
    """Per tool either model called on the paired tasks: calls, results, errors of each, and
    Fisher's test on the error rates where both got results; most errors first."""
    by = {(r["model"], r["tool"]): r for r in use.iter_rows(named=True)}
    tools = sorted({tool for _, tool in by})
    zero = {"calls": 0, "results": 0, "errors": 0}
    raw = []
    for tool in tools:
        x, y = by.get((a, tool), zero), by.get((b, tool), zero)
        p = t.fisher(x["errors"], x["results"], y["errors"], y["results"]) \
            if x["results"] and y["results"] and x["errors"] + y["errors"] else None
        raw.append((tool, x, y, p))
    tested = [p for *_, p in raw if p is not None]
    qs = iter(t.bh(tested))
    rows = [ToolRow(tool, x["calls"], x["results"], x["errors"], y["calls"], y["results"], y["errors"],
                    p, next(qs) if p is not None else None) for tool, x, y, p in raw]
    return sorted(rows, key=lambda r: (-(r.a_errors + r.b_errors), -(r.a_calls + r.b_calls), r.tool))


def compare_agents(con, a: str, b: str, analyst: str | None, datasets=None, domains=None,
                   split: str = fe.MAIN_SPLIT) -> AgentComparison | None:
    """A vs B on the tasks both ran with a transcript; None when there is no such task."""
    tasks = tr.paired_agent_tasks(con, a, b, datasets, domains)
    if tasks.is_empty():
        return None
    if analyst:
        steps = fe.first_error_steps(con, analyst, [a, b], datasets, domains, split)
        steps = steps.join(tasks, on=["dataset", "instance_id"], how="semi")
        firsts = [first_errors_of(m, steps) for m in (a, b)]
        p = share_test(steps, a, b)
    else:
        firsts, p = [], None
    use = tr.paired_tool_use(con, a, b, datasets, domains)
    return AgentComparison(a, b, analyst, tasks.height, firsts, p, tool_rows(use, a, b))
