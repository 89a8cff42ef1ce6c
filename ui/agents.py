"""Agent runs on /signatures and /compare: where each model's first decisive error falls in its
runs (early / middle / late, in steps and as a share of the run) and which tools fail for it
(stats/agents.py). Shown only where the filters select transcripts."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats import fmt
from stats.agents import AgentComparison, AgentSide, share_test_text

from . import columns
from .tables import show_table
from .text import md

POSITION_HELP = ("The third of the run's steps the analyst's first decisive error falls in: early = the "
                 "first third, late = the last.")


MEASURES = (  # (key, label, help): the rows of the agent tables on /compare and /signatures
    ("tasks", "Tasks", "questions with a transcript (the model's latest run of each)"),
    ("failed", "Failed", None),
    ("steps_median", "Steps (median)", "steps in a run, median over its tasks"),
    ("analysed", "Analysed", "failed runs the analyst analysed as transcripts"),
    ("with_step", "Step named", "analysed runs with a first decisive error step named"),
    ("early", "Early", POSITION_HELP),
    ("middle", "Middle", POSITION_HELP),
    ("late", "Late", POSITION_HELP),
    ("step_median", "Error step (median)", "the first decisive error's step index, median"),
    ("share_median", "Run before it (median)", "the share of the run's steps before the first error, median"),
    ("tool_errors", "Tool errors", "tool results the log marks as errors, of all tool results"),
)


def _values(s: AgentSide) -> dict[str, str]:
    """A side's measures as the tables print them (counts with separators, medians, shares)."""
    return {
        "tasks": fmt.count(s.tasks), "failed": fmt.count(s.failed), "steps_median": fmt.number(s.steps_median),
        "analysed": fmt.count(s.analysed), "with_step": fmt.count(s.with_step), "early": fmt.count(s.early),
        "middle": fmt.count(s.middle), "late": fmt.count(s.late), "step_median": fmt.number(s.step_median),
        "share_median": fmt.pct(s.share_median),
        "tool_errors": f"{fmt.count(s.tool_errors)} of {fmt.count(s.tool_results)}",
    }


def _measures_table(sides: list[AgentSide], name: str, labels: list[str], title: str) -> None:
    """One row per measure, one column per model: reads across, and fits a page where a column per
    measure would not (eleven of them)."""
    values = [_values(side) for side in sides]
    columns_ = {f"m{n}": [v[k] for k, _, _ in MEASURES] for n, v in enumerate(values)}
    frame = pl.DataFrame({"measure": [label for _, label, _ in MEASURES], **columns_})
    show_table(frame, name=name, hide_index=True, height=35 * (len(MEASURES) + 1) + 3, column_config={
        "measure": st.column_config.TextColumn(title, help=POSITION_HELP),
        **{f"m{n}": st.column_config.TextColumn(label, alignment="right") for n, label in enumerate(labels)}})


def _tools_table(side: AgentSide, name: str, where=None) -> None:
    tools = side.tools.head(8)
    if tools.is_empty():
        (where or st).caption("No tool calls.")
        return
    frame = tools.select("tool", "calls", "results", "errors",
                         pl.Series("error_share", [fmt.pct(v) for v in tools["error_share"].to_list()]), "tasks")
    show_table(frame, name=name, where=where, hide_index=True, column_config={
        "tool": "Tool", "calls": columns.count("Calls"), "results": columns.count("Results"),
        "errors": columns.count("Errored"),
        "error_share": st.column_config.TextColumn("Share errored", alignment="right"),
        "tasks": columns.count("Tasks", "questions whose run called it")})


def signatures_section(sides: list[AgentSide]) -> None:
    st.subheader("Agent runs: where the first error falls, which tools fail")
    st.caption("Per model, over its runs with a transcript under these filters (its latest run of each "
               "task). The first error is the analyst's first decisive error step; tool errors are the "
               "tool results the log marks as errors.")
    _measures_table(sides, "signature-agents", [s.model for s in sides], "Per model")
    with st.expander("Tools per model, those that fail most first"):
        for side in sides:
            st.markdown(f"**{md(side.model)}**")
            _tools_table(side, f"signature-tools-{side.model}")


def compare_section(c: AgentComparison) -> None:
    st.subheader("Agent runs")
    if c.shared_tasks == 0:
        st.info("These two models have no task with a transcript in common under these filters: their agent "
                "runs cannot be compared task by task.")
        return
    st.caption(f"On the {fmt.plural(c.shared_tasks, 'task')} both models ran with a transcript (each one's "
               "latest run). Early / middle / late: the third of the run's steps the analyst's first decisive "
               "error falls in.")
    _measures_table([c.a_side, c.b_side], "compare-agents", [f"A: {c.a}", f"B: {c.b}"], "On the tasks both ran")
    st.markdown(md(share_test_text(c), 1000))
    st.caption("Tools are counted, not tested: the calls of one run are not independent trials, so a test "
               "per call would overstate what the counts show.")
    left, right = st.columns(2)
    for where, label, side in ((left, "A", c.a_side), (right, "B", c.b_side)):
        where.markdown(f"**{label}: {md(side.model)}** — tools, those that fail most first")
        _tools_table(side, f"compare-tools-{label}", where=where)
