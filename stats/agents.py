"""Models on agent tasks: where the analyst's first decisive error falls in a run (early,
middle or late: the third of the run's steps it lies in, and the share of the run before it) and
which tools fail for each model — per model (signatures) and for two models on the tasks both ran
(compare).

Pairing: a task is a (dataset, question) both models have a transcript for (their latest
prediction on it, store/transcripts.py). The one test is on what is paired and measured: the
Wilcoxon signed-rank test of the first error's share of the run, over the tasks both models failed
with a step named by the analyst. Tool calls are counted, not tested: the calls of one run are not
independent trials, so a test per call would overstate what the counts show.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from core import significance as t
from store import first_errors, transcripts
from store.first_errors import POSITIONS
from store.queries import MAIN_SPLIT

from . import fmt

TASK_KEY = ("dataset", "instance_id")
TOP_TOOLS = 8  # tools listed per model, those that fail most first


@dataclass(frozen=True)
class AgentSide:
    """One model on agent tasks (all its tasks under the filters, or those shared with another)."""

    model: str
    tasks: int            # questions with a transcript
    failed: int           # of them, failed
    steps_median: float | None
    analysed: int         # failed ones the analyst analysed as transcripts
    with_step: int        # of them, with a first-error step named
    early: int
    middle: int
    late: int
    step_median: float | None    # the first error's step index, median
    share_median: float | None   # the share of the run before the first error, median
    tool_calls: int
    tool_results: int
    tool_errors: int
    tools: pl.DataFrame   # tool, calls, results, errors, error_share, tasks (most errors first)

    def to_json(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "model", "tasks", "failed", "steps_median", "analysed", "with_step", *POSITIONS, "step_median",
            "share_median", "tool_calls", "tool_results", "tool_errors")}
        out["tools"] = self.tools.head(TOP_TOOLS).to_dicts()
        return out


@dataclass(frozen=True)
class AgentComparison:
    a: str
    b: str
    analyst: str | None
    shared_tasks: int          # tasks both models have a transcript for
    a_side: AgentSide          # on the shared tasks
    b_side: AgentSide
    both_with_step: int        # shared tasks both failed with a first-error step named
    share_diff_median: float | None  # B's share − A's, median over those
    wilcoxon_p: float | None
    wilcoxon_n: int

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "analyst": self.analyst, "shared_tasks": self.shared_tasks,
                "a_side": self.a_side.to_json(), "b_side": self.b_side.to_json(),
                "first_error_share": {"both_failed_with_step": self.both_with_step,
                                      "median_difference_b_minus_a": self.share_diff_median,
                                      "wilcoxon_p": self.wilcoxon_p, "wilcoxon_n": self.wilcoxon_n}}


def compare_json(comparison, agents: AgentComparison | None) -> dict:
    """The documented `stats compare --json` shape (the MCP compare tool's too): the comparison,
    then the agent runs under "agents" (null without transcripts)."""
    return {**comparison.to_json(), "agents": agents.to_json() if agents else None}


def _median(frame: pl.DataFrame, column: str) -> float | None:
    values = frame[column].drop_nulls()
    return float(values.median()) if len(values) else None


def _tools(calls: pl.DataFrame) -> pl.DataFrame:
    return (
        calls.group_by("tool")
        .agg(pl.col("calls", "malformed_calls", "results", "errors").sum(), tasks=pl.struct(*TASK_KEY).n_unique())
        .with_columns(error_share=pl.when(pl.col("results") > 0).then(pl.col("errors") / pl.col("results")))
        .with_columns(pl.col("calls", "malformed_calls", "results", "errors", "tasks").cast(pl.Int64))
        .sort(["errors", "calls", "tool"], descending=[True, True, False])
    )


def _side(model: str, tasks: pl.DataFrame, steps: pl.DataFrame, calls: pl.DataFrame) -> AgentSide:
    mine_tasks = tasks.filter(pl.col("model") == model)
    mine_steps = steps.filter(pl.col("model") == model)
    mine_calls = calls.filter(pl.col("model") == model)
    named = mine_steps.filter(pl.col("step_index").is_not_null())
    positions = {p: named.filter(pl.col("position") == p).height for p in POSITIONS}
    return AgentSide(
        model=model, tasks=mine_tasks.height, failed=mine_tasks.filter(pl.col("is_correct") == False).height,  # noqa: E712
        steps_median=_median(mine_tasks, "n_steps"), analysed=mine_steps.height, with_step=named.height,
        **positions, step_median=_median(named, "step_index"), share_median=_median(named, "share"),
        tool_calls=int(mine_calls["calls"].sum()), tool_results=int(mine_calls["results"].sum()),
        tool_errors=int(mine_calls["errors"].sum()), tools=_tools(mine_calls))


def _on_tasks(frame: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    return frame.join(keys, on=list(TASK_KEY), how="semi")


def agent_sides(con, analyst: str | None, models=None, datasets=None, domains=None,
                split: str = MAIN_SPLIT) -> list[AgentSide]:
    """Each model that has transcripts under the filters, on all its tasks (for signatures)."""
    tasks = transcripts.agent_tasks(con, models, datasets, domains)
    if tasks.is_empty():
        return []
    steps = _steps(con, analyst, models, datasets, domains, split)
    calls = transcripts.tool_use_by_task(con, models, datasets, domains)
    return [_side(m, tasks, steps, calls) for m in sorted(set(tasks["model"]))]


def _steps(con, analyst, models, datasets, domains, split) -> pl.DataFrame:
    if analyst is None:
        return pl.DataFrame(schema={"model": pl.String, "dataset": pl.String, "instance_id": pl.String,
                                    "step_index": pl.Int64, "share": pl.Float64, "position": pl.String})
    return first_errors.first_error_steps(con, analyst, models, datasets, domains, split)


def agent_compare(con, a: str, b: str, analyst: str | None, datasets=None, domains=None,
                  split: str = MAIN_SPLIT) -> AgentComparison | None:
    """A and B on the agent tasks both ran; None when neither has a transcript under the filters."""
    tasks = transcripts.agent_tasks(con, [a, b], datasets, domains)
    if tasks.is_empty():
        return None
    keys = (tasks.filter(pl.col("model") == a).select(TASK_KEY)
            .join(tasks.filter(pl.col("model") == b).select(TASK_KEY), on=list(TASK_KEY)))
    steps = _on_tasks(_steps(con, analyst, [a, b], datasets, domains, split), keys)
    calls = _on_tasks(transcripts.tool_use_by_task(con, [a, b], datasets, domains), keys)
    tasks = _on_tasks(tasks, keys)
    named = steps.filter(pl.col("step_index").is_not_null()).select(*TASK_KEY, "model", "share")
    both = (named.filter(pl.col("model") == a).rename({"share": "a"}).drop("model")
            .join(named.filter(pl.col("model") == b).rename({"share": "b"}).drop("model"), on=list(TASK_KEY)))
    diff = (both["b"] - both["a"]).to_list()
    p, ranked = t.wilcoxon_signed_rank(diff) if diff else (None, 0)
    return AgentComparison(
        a=a, b=b, analyst=analyst, shared_tasks=keys.height,
        a_side=_side(a, tasks, steps, calls), b_side=_side(b, tasks, steps, calls),
        both_with_step=both.height,
        share_diff_median=float(pl.Series(diff).median()) if diff else None,
        wilcoxon_p=p, wilcoxon_n=ranked)


def position_text(side: AgentSide) -> str:
    """Where a model's first errors fall, in words."""
    if side.with_step == 0:
        return (f"{fmt.plural(side.analysed, 'failed run')} analysed, no first-error step named"
                if side.analysed else "no failed run analysed as a transcript yet")
    return (f"first error in {fmt.plural(side.with_step, 'failed run')} (of {fmt.count(side.analysed)} analysed): "
            f"early {fmt.count(side.early)}, middle {fmt.count(side.middle)}, late {fmt.count(side.late)}; "
            f"median step {fmt.number(side.step_median)}, median {fmt.pct(side.share_median)} of the run before it")


def tools_text(side: AgentSide, top: int = 3) -> str:
    """The tools whose results errored most, in words."""
    failing = side.tools.filter(pl.col("errors") > 0).head(top)
    if failing.is_empty():
        return f"{fmt.plural(side.tool_calls, 'tool call')}, no tool result errored"
    return (f"{fmt.plural(side.tool_errors, 'tool error')} in {fmt.count(side.tool_results)} results; most: "
            + ", ".join(f"{r['tool']} {fmt.count(r['errors'])} of {fmt.count(r['results'])}"
                        for r in failing.iter_rows(named=True)))


def share_test_text(c: AgentComparison) -> str:
    if c.both_with_step == 0:
        return "No task both failed with a first-error step named: the position of the first error is not tested."
    return (f"First error's place in the run (the share of its steps before it), B − A: median "
            f"{100 * c.share_diff_median:+.1f} percentage points over the "
            f"{fmt.plural(c.both_with_step, 'task')} both failed with a step named; Wilcoxon signed-rank "
            f"p = {fmt.p_value(c.wilcoxon_p)} on {fmt.plural(c.wilcoxon_n, 'non-zero difference')}.")


def agent_lines(c: AgentComparison) -> list[str]:
    """The agent comparison for a terminal."""
    lines = [f"\nAgent runs: {fmt.plural(c.shared_tasks, 'task')} both ran (with a transcript)"]
    for label, side in (("A", c.a_side), ("B", c.b_side)):
        lines.append(f"  {label} {side.model}: {fmt.count(side.failed)} of {fmt.count(side.tasks)} failed, "
                     f"median {fmt.number(side.steps_median)} steps; {position_text(side)}")
        lines.append(f"    tools: {tools_text(side)}")
    lines.append(f"  {share_test_text(c)}")
    return lines
