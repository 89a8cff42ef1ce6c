"""One model's outcome on one question, as /instances shows it: the verdict with the score and
the rule that made it, the chosen option beside the gold, the judges' own words, and the task's
instructions. Every text from the log goes out as text (ui/text.py)."""

from __future__ import annotations

import streamlit as st

from stats import fmt

from .text import md, show


def verdict_block(row: dict) -> None:
    """Score, metric, pass rule and verdict, and why the verdict is special when it is."""
    word = fmt.outcome(row)
    colour = {"passed": "green", "failed": "red"}.get(word, "gray")
    st.markdown(f"**{md(row['model'])}** — :{colour}[{word}]")
    metric = row.get("main_metric")
    score = f"{md(metric)} = {fmt.number(row['score'])}" if metric else f"score {fmt.number(row['score'])}"
    rule = fmt.row_pass_rule(row)
    st.caption(f"{score} · {md(rule, 400)}")
    notes = []
    stored = row.get("stored_correct")
    if stored is not None and row["is_correct"] is not None and stored != row["is_correct"]:
        # the analysis threshold was moved for this view: say what the ingest decided
        notes.append(f"{word} under the analysis threshold set for this view; as ingested it "
                     f"{'passed' if stored else 'failed'}")
    if row.get("verdict_note"):
        notes.append(md(row["verdict_note"], 600))
    if row.get("finish_reason") == "length":
        cap = f" ({fmt.plural(row['max_tokens'], 'token')})" if row.get("max_tokens") else ""
        notes.append(f"output cut at the token limit{cap}")
    elif row.get("finish_reason"):
        notes.append(f"generation stopped: {md(row['finish_reason'])}")
    if notes:
        st.caption("Note: " + "; ".join(notes))


def answer_block(row: dict, refs: list, choices) -> None:
    """For multiple choice, the option the model chose (letter and text) next to the gold."""
    chosen = fmt.chosen(row["output_text"], row.get("mapped_output"), choices)
    if chosen is None:
        return
    gold = fmt.gold(refs, choices) or "–"
    st.markdown(f"chose **{md(chosen, 600)}**  \ngold **{md(gold, 600)}**")


def judges_block(notes) -> None:
    """The judges' own explanations (HELM annotators, Inspect scorers, promptfoo assertions)."""
    notes = [n for n in notes or [] if isinstance(n, dict)]
    if not notes:
        return
    st.markdown(f"**{'The judge says' if len(notes) == 1 else f'The judges say ({len(notes)})'}**")
    for n in notes:
        head = " · ".join(x for x in (
            md(n.get("judge")) if n.get("judge") else "", md(n.get("criterion")) if n.get("criterion") else "",
            f"score {fmt.number(n['score'])}" if isinstance(n.get("score"), (int, float)) else
            (f"score {md(n['score'])}" if n.get("score") not in (None, "") else "")) if x)
        with st.container(border=True):
            if head:
                st.caption(head)
            show(n.get("explanation") or "(no explanation given)", 4000)


def task_block(first: dict) -> None:
    """The task's instructions and, when logged, the prompt exactly as the model saw it."""
    if first.get("instructions"):
        with st.expander("Task instructions (the same for every question of the run)"):
            show(first["instructions"])
    if first.get("prompt_text"):
        with st.expander("The prompt exactly as the model saw it"):
            show(first["prompt_text"])
