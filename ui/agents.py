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


def _sides_frame(sides: list[AgentSide], labels: list[str] | None = None) -> pl.DataFrame:
    rows = []
    for n, s in enumerate(sides):
        rows.append({
            "model": s.model if labels is None else f"{labels[n]}: {s.model}",
            "tasks": s.tasks, "failed": s.failed, "steps_median": fmt.number(s.steps_median),
            "analysed": s.analysed, "with_step": s.with_step, "early": s.early, "middle": s.middle, "late": s.late,
            "step_median": fmt.number(s.step_median), "share_median": fmt.pct(s.share_median),
            "tool_errors": f"{fmt.count(s.tool_errors)} of {fmt.count(s.tool_results)}",
        })
    return pl.DataFrame(rows)


def _sides_table(sides: list[AgentSide], name: str, labels: list[str] | None = None) -> None:
    frame = _sides_frame(sides, labels)
    right = {"alignment": "right"}
    show_table(frame, name=name, hide_index=True, column_config={
        "model": "Model",
        "tasks": columns.count("Tasks", "Questions with a transcript (the model's latest run of each)"),
        "failed": columns.count("Failed"),
        "steps_median": st.column_config.TextColumn("Median steps", **right),
        "analysed": columns.count("Failed runs analysed", "analysed as transcripts by this analyst"),
        "with_step": columns.count("First error step named"),
        "early": columns.count("Early", POSITION_HELP),
        "middle": columns.count("Middle", POSITION_HELP),
        "late": columns.count("Late", POSITION_HELP),
        "step_median": st.column_config.TextColumn("Median first-error step", **right),
        "share_median": st.column_config.TextColumn("Median share of the run before it", **right),
        "tool_errors": st.column_config.TextColumn("Tool results that errored", **right),
    })


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
    _sides_table(sides, "signature-agents")
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
    _sides_table([c.a_side, c.b_side], "compare-agents", labels=["A", "B"])
    st.markdown(md(share_test_text(c), 1000))
    st.caption("Tools are counted, not tested: the calls of one run are not independent trials, so a test "
               "per call would overstate what the counts show.")
    left, right = st.columns(2)
    for where, label, side in ((left, "A", c.a_side), (right, "B", c.b_side)):
        where.markdown(f"**{label}: {md(side.model)}** — tools, those that fail most first")
        _tools_table(side, f"compare-tools-{label}", where=where)
