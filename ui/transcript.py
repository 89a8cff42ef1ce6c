"""An agent's transcript on /instances: a timeline read a page of steps at a time.

Each step shows its number, agent, role and kind; a tool call its tool with the arguments folded,
a tool result folded under its tool, an error marked in red; a long text is cut visibly with the
whole stored text one click away; the analyst's first-error step is highlighted with its evidence
quote marked in the step's text. `?step=N` in the URL opens the page holding step N and marks it.
Model text is text throughout: `md` for one-line labels, `html_text` (via evidence.highlight) or
st.text/st.code for bodies.
"""

from __future__ import annotations

import json
import math

import streamlit as st

from core.numbers import NumberError, whole_number
from stats import fmt
from store import transcripts as tr

from . import evidence
from .data import load
from .text import clip, code, cut_note, md, visible

# characters of a step's text shown before "show all"; a step is a line of the timeline, not a page
PREVIEW_CHARS = 600
STEPS_PER_PAGE = tr.PAGE_STEPS


def linked_step(size: int) -> int | None:
    """The step `?step=N` names, when it is a step of this transcript; otherwise None (and a
    warning when the link names one it does not have)."""
    raw = st.query_params.get("step")
    if raw is None:
        return None
    try:
        step = whole_number(raw, "step")  # ASCII digits only: int() takes "٣", "²".isdigit() is True
    except NumberError:
        step = None
    if step is None or not 0 <= step < size:  # step_index is 0-based and dense (docs/store.md)
        st.warning(f"The link names step “{md(raw)}”, which this transcript of "
                   f"{fmt.plural(size, 'step')} does not have.", icon=":material/link_off:")
        return None
    return step


def summary(run_id: str, instance_id: str, trial: int) -> dict | None:
    counts = load(tr.step_counts, run_ids=[run_id], instance_ids=[instance_id])
    rows = [r for r in counts.iter_rows(named=True) if r["train_trial_index"] == trial]
    return rows[0] if rows else None


def _summary_line(c: dict) -> str:
    parts = [fmt.plural(c["n_steps"], "step"), fmt.plural(c["n_tool_calls"], "tool call"),
             fmt.plural(c["n_tool_errors"], "tool result") + " with an error" if c["n_tool_errors"] else "no tool error",
             fmt.plural(c["n_errors"], "error step") if c["n_errors"] else ""]
    if c["agents"]:
        parts.append("agents " + ", ".join(md(a, 60) for a in c["agents"]))
    if c["input_tokens"] or c["output_tokens"]:
        parts.append(f"tokens {fmt.count(c['input_tokens'] or 0)} in / {fmt.count(c['output_tokens'] or 0)} out")
    if c["seconds"]:
        parts.append(f"{c['seconds']:,.1f} s logged")
    if c["n_cut"]:
        parts.append(f"{fmt.plural(c['n_cut'], 'text')} cut at ingest (full length kept)")
    return " · ".join(p for p in parts if p)


def _head(s: dict) -> str:
    """The step's one-line heading: number, agent, role, kind, tool."""
    bits = [f"**#{s['step_index']}**"]
    if s["agent"]:
        bits.append(f"**{md(s['agent'], 80)}**")
    if s["role"] and s["role"] != s["agent"]:
        bits.append(md(s["role"], 40))
    kind = s["kind"]
    if kind == "tool call":
        bits.append(f":blue-badge[tool call] {code(s['tool_name'] or '(unnamed)', 80)}")
    elif kind == "tool result":
        bits.append(f":gray-badge[tool result] {code(s['tool_name'] or '(unnamed)', 80)}")
    elif kind == "error":
        bits.append(":red-badge[error]")
    elif kind == "system event":
        bits.append(":violet-badge[system event]")
    else:
        bits.append(md(kind, 40))
    if s["error"]:
        bits.append(":red-badge[:material/error: error]")
    extra = [f"{s['seconds']:,.1f} s" if s["seconds"] is not None else "",
             f"{fmt.count(s['output_tokens'])} tokens out" if s["output_tokens"] else "",
             f"stopped: {md(s['finish_reason'], 40)}" if s["finish_reason"] else ""]
    return " · ".join(bits + [e for e in extra if e])


def _body(s: dict, quote: str | None, key: str) -> None:
    """The step's text, cut at PREVIEW_CHARS with the whole of it one click away; a tool call's
    arguments and a tool result's text folded; an error in red."""
    text = s["text"] or ""
    stored_cut = (s["text_chars"] or 0) - len(text)
    if s["kind"] == "tool call" and s["tool_arguments"]:
        # open, as logged, when the analyst's quote is in them (marked as in any text)
        with st.expander(f"arguments: {md(s['tool_arguments'], 100)}", expanded=bool(quote)):
            if quote:
                _text(s["tool_arguments"], quote)
            else:
                try:
                    shown = json.dumps(json.loads(s["tool_arguments"]), indent=2, ensure_ascii=False)
                except ValueError:
                    shown = s["tool_arguments"]
                st.code(visible(clip(shown)[0]), language=None, wrap_lines=True)
    if s["error"]:
        st.markdown(f":red[**error:** {md(s['error'], 1000)}]")
    if s["kind"] == "tool call" and text == s["tool_arguments"]:
        text = ""  # the call's text is its arguments, shown above
    if text:
        folded = s["kind"] == "tool result" and quote is None
        preview, more = clip(text, PREVIEW_CHARS)
        if folded:
            with st.expander(f"result ({fmt.plural(s['text_chars'], 'character')}): {md(text, 100)}"):
                _text(text, quote)
        else:
            _text(preview, quote)
            if more:
                st.caption(f"[… {more:,} more characters]")
                with st.expander(f"show all {fmt.plural(len(text), 'character')}"):
                    _text(text, quote)
        if stored_cut > 0:
            st.caption(f"ingest kept the first {len(text):,} of {s['text_chars']:,} characters "
                       "(the cap stated in docs/store.md); the rest is in the log")
    elif not s["tool_arguments"] and not s["error"] and not s["text_chars"]:
        st.caption("(no text)")


def _text(text: str, quote: str | None) -> None:
    shown, cut = clip(text)
    # a little room below the text, so its last line does not sit on the step's border
    html = evidence.highlight(shown, [quote] if quote else [], style="padding-bottom: 0.4rem")
    st.markdown(html, unsafe_allow_html=True)
    if cut:
        st.caption(cut_note(cut))


def step_box(s: dict, first_error: dict | None, linked: int | None, key: str) -> None:
    """One step; the analyst's first-error step and the linked step in a box of their own."""
    is_first = first_error is not None and s["step_index"] == first_error["step_index"]
    with st.container(border=True):
        st.markdown(_head(s))
        if is_first:
            st.markdown(f":orange-badge[:material/flag: first decisive error] by analyst "
                        f"{md(first_error['analyst'], 80)}"
                        + (f" · agent {md(first_error['agent'], 80)}" if first_error.get("agent") else "")
                        + (" · evidence quote marked below" if first_error.get("quote") else ""))
        elif s["step_index"] == linked:
            st.caption(":material/link: the step this link names")
        _body(s, first_error.get("quote") if is_first else None, key)


def timeline(row: dict, analysis: dict | None, key: str = "transcript") -> None:
    """The transcript of `row`'s prediction (run_id, instance_id, train_trial_index) as a paged
    timeline; `analysis` names the first-error step (step_index, agent, quote, analyst) or None."""
    run_id, instance_id, trial = row["run_id"], row["instance_id"], row.get("train_trial_index") or 0
    counts = summary(run_id, instance_id, trial)
    if counts is None:
        return
    size = counts["n_steps"]
    st.caption(_summary_line(counts))
    first = analysis if analysis and analysis.get("step_index") is not None else None
    linked = linked_step(size)
    pages = max(1, math.ceil(size / STEPS_PER_PAGE))
    # open on the linked step's page, else the first error's, else the start
    anchor = linked if linked is not None else (first["step_index"] if first else 0)
    start_page = min(max(anchor, 0), size - 1) // STEPS_PER_PAGE + 1
    jump = st.columns([2, 2, 3])
    if first:
        jump[0].caption(f"first decisive error at step {first['step_index']} (page "
                        f"{first['step_index'] // STEPS_PER_PAGE + 1})")
    if counts["first_error_step"] is not None:
        jump[1].caption(f"first step with a logged error: {counts['first_error_step']}")
    widget = f"{key}-page-{run_id}-{instance_id}-{linked}"

    def _paged() -> None:
        # the URL keeps the view: a new page is linked as its first step (ui/urlstate.py's rule)
        st.query_params["step"] = str((st.session_state[widget] - 1) * STEPS_PER_PAGE)

    page = jump[2].number_input(f"Page of steps (of {pages:,}, {STEPS_PER_PAGE} each)", 1, pages,
                                min(max(start_page, 1), pages), key=widget, on_change=_paged)
    lo = (page - 1) * STEPS_PER_PAGE
    steps = load(tr.transcript_page, run_id=run_id, instance_id=instance_id, trial=trial, start=lo,
                 limit=STEPS_PER_PAGE)
    if steps.height:
        st.caption(f"Steps {steps['step_index'][0]:,}–{steps['step_index'][-1]:,} of {size:,}. "
                   "Link to a step: add step=N to this page's link.")
    for s in steps.iter_rows(named=True):
        step_box(s, first, linked, key)
