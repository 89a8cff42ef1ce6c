"""Search outcomes and open one question: input, references, outputs side by side, the analysis
with its evidence, and human review of the classification."""

import ui.preload  # noqa: F401  (first: the heavy libraries once, in one order; see ui/preload.py)

import streamlit as st

import ui
from store import FaultlineError, analysis as sa, queries as q, transcripts
from stats import fmt
from ui import agreement, columns, evidence, outcome, review, transcript
from ui.text import clip, cut_note, md, show, visible, visible_data
from ui.urlstate import warn_unknown
from ui.tables import show_table

ui.configure_page("pages/instances.py", "Instances")
ui.require_data()
f = ui.sidebar_filters()
analyst = ui.analyst_picker(f)
ui.offline_caveat(analyst)

categories = ui.load(q.category_names, analyst=analyst) if analyst else []
warn_unknown("category", "category", categories)
c1, c2, c3 = st.columns([2, 1, 2])
category = c1.selectbox("Category", categories, index=None, key="category", bind="query-params",
                        placeholder="any category")
# opens on the failures (what a researcher came for); click "failed" again to list every outcome
verdicts = c2.segmented_control("Outcome", ["failed", "passed"], default="failed", key="outcome",
                                bind="query-params")
text = c3.text_input("Search input, output, id or error title", key="text", bind="query-params")

query = dict(analyst=analyst, category=category, outcome=verdicts, text=text, **f.kwargs())
rows = ui.load(q.instance_list, **query)
total = ui.load(q.instance_count, **query)


def _open_clicked() -> None:
    # a click on a row opens that question (runs before the rerun, so it may set the widget)
    picked = st.session_state["rows"].selection.rows
    if picked:
        row = rows.row(picked[0], named=True)
        st.session_state["instance"] = f"{row['dataset']}:{row['instance_id']}"


what = {"failed": "failed outcomes", "passed": "passed outcomes"}.get(verdicts, "outcomes")
st.caption(f"{fmt.plural(total, what[:-1] if total == 1 else what, what)}"
           + (f" (the first {rows.height:,} listed; narrow the filters or search)" if total > rows.height else "")
           + " — click a row to open its question.")
listed = columns.unlabelled(columns.words(rows.rename({"is_correct": "passed"}), "passed"))
# the columns a reader scans come first, each a fixed width, so at 1280 px all of them show
# (tests/ui/test_browser.py measures it); the output's start and the domain follow off to the right
show_table(listed.select(*columns.INSTANCE_WIDTHS), name="instances", hide_index=True, height=260, key="rows",
           on_select=_open_clicked, selection_mode="single-row",
           column_config=columns.instance_list_config(columns.instance_widths(listed)))

keys = list(dict.fromkeys(f"{d}:{i}" for d, i in rows.select("dataset", "instance_id").iter_rows()))
linked = st.query_params.get("instance")
if linked and linked not in keys:
    keys.insert(0, linked)
instance = st.selectbox("Open a question (dataset:instance_id)", keys, index=None, key="instance",
                        bind="query-params", placeholder="click a row above, or pick a question here")
ui.share_link("/instances", {**f.params(), "analyst": analyst, "category": category,
                             "outcome": verdicts, "text": text, "instance": instance,
                             "transcript": st.query_params.get("transcript"), "step": st.query_params.get("step")})
if not instance:
    # with no question open: what to review next, and the distractors models share
    if analyst:
        agreement.review_queue(analyst, f)
    agreement.shared_wrong_answers(f, analyst)
    st.stop()

dataset, _, instance_id = instance.partition(":")
detail = ui.load(q.instance_detail, dataset=dataset, instance_id=instance_id, analyst=analyst,
                 models=f.models, thresholds=f.thresholds)
if not detail:
    st.warning(f"No outcome for question “{md(instance)}” under these filters.")
    st.stop()

# relabelling may pick any category of a stored taxonomy, not only those seen so far
relabel_choices = sorted(set(categories) | {
    c["name"] for t in ui.load(q.taxonomies) if isinstance(t["categories"], list)
    for c in t["categories"] if isinstance(c, dict) and "name" in c})
first = detail[0]
st.header(f"{md(first['dataset'])} · {md(first['instance_id'])}")
st.caption(f"domain {md(first['domain'] or '—')} · split {md(first['split'] or '—')} · "
           f"raw id {md(first['raw_instance_id'])}")
outcome.task_block(first)
st.subheader("Input")
if first["input_text"]:
    show(first["input_text"])
elif first["input_messages"]:
    st.json(visible_data(first["input_messages"]))
else:  # a table of your own without an input column (st.json of nothing draws an error box)
    st.caption("The log holds no input for this question.")
refs = first["refs"] or []
if first["choices"] and not refs:
    show_table([{"option": k, "text": v} for k, v in first["choices"].items()], name="options", hide_index=True)
st.subheader("Options and references" if first["choices"] and refs else "References")
if refs:
    letters = {str(v): str(k) for k, v in first["choices"].items()} if isinstance(first["choices"], dict) else {}
    show_table([{**({"option": letters.get(str(r.get("text", "")), "")} if letters else {}),
                   "reference": r.get("text", ""), "correct": fmt.yes_no(bool(r.get("correct")))} for r in refs],
                 name="references", hide_index=True, column_config={"option": st.column_config.TextColumn("Option", width="small"),
                                                 "reference": st.column_config.TextColumn("Reference", width="large"),
                                                 "correct": st.column_config.TextColumn("Correct answer", width="small")})
else:
    st.caption("The log gives no reference.")

verdicts = ui.load(sa.question_verdicts, dataset=dataset, instance_id=instance_id, analyst=analyst) if analyst else []
st.subheader("Outputs")
for col, row in zip(st.columns(len(detail)), detail):
    with col:
        outcome.verdict_block(row)
        outcome.answer_block(row, refs, first["choices"])
        raw_criteria = row["required_criteria"]
        criteria = evidence.criteria(raw_criteria)
        # a transcript's analysis quotes one of its steps, not the output (checked when stored)
        on_steps = row["n_steps"] is not None
        quotes = [] if on_steps else [c.get("evidence") or "" for c in criteria]
        shown, cut = clip(row["output_text"] or "")
        # set off by a rule at its left, so the output does not read as part of the label below it
        st.markdown(evidence.highlight(shown, quotes, style=evidence.OUTPUT_STYLE), unsafe_allow_html=True)
        if cut:
            st.caption(cut_note(cut))
        if row["mapped_output"] and not fmt.chosen(row["output_text"], row["mapped_output"], first["choices"]):
            st.caption(f"mapped answer: {md(row['mapped_output'])}")
        outcome.judges_block(row["judge_notes"])
        if row["error_title"]:
            st.markdown(f"**{md(row['error_title'])}** → *{md(row['category'] or 'not classified yet')}*")
            st.caption(f"analyst {md(row['analyst'])} · taxonomy {md(row['taxonomy_version'] or '—')}")
            st.markdown(md(row["error_summary"], 4000))
            if on_steps:
                st.caption(f"first decisive error at step {row['step_index']} of {row['n_steps']}"
                           + (f" · agent {md(row['step_agent'])}" if row["step_agent"] else "")
                           if row["step_index"] is not None else
                           f"no step named in this transcript of {row['n_steps']} steps")
            for v in (v for v in verdicts if v["run_id"] == row["run_id"]):
                st.caption(f"verified by {md(v['verifier'])}: " + ("accepted" if v["accepted"] else "REJECTED")
                           + (f" — {md(v['reason'])}" if v["reason"] else ""))
            where = f"step {row['step_index']}" if on_steps else "the output"
            for c in criteria:
                found = (c.get("evidence_verified") is True if on_steps else
                         evidence.locate(row["output_text"] or "", c.get("evidence") or "") is not None)
                with st.container(border=True):
                    present = c.get("present_in_wrong")
                    st.markdown(f"**{md(c.get('criterion'))}** · quality {md(c.get('quality') or '—')}"
                                f" · in the {'run' if on_steps else 'output'}: {fmt.yes_no(present)}")
                    if c.get("evidence"):
                        st.caption("evidence " + (f"(verified: it occurs verbatim in {where})" if found else
                                                  f"(UNVERIFIED: not in {where} verbatim; the analyst paraphrased)"))
                        st.code(visible(clip(c["evidence"], 2000)[0]), language=None, wrap_lines=True)
                    if c.get("comment"):
                        show(c["comment"], 4000)
            if not criteria and raw_criteria:
                st.caption("Analysis details (no stage-1 criteria):")
                st.json(visible_data(raw_criteria), expanded=False)
            try:
                review.panel(row, relabel_choices)
            except FaultlineError as exc:
                st.error(ui.public_message(exc.message))
        elif not row["is_correct"]:
            st.caption("Not analysed yet" + (" — it fails only under the analysis threshold set for this "
                                            "view; as ingested it passed, so no analysis was made."
                                            if row["stored_correct"] else "."))

# an agent's run, step by step: one model's transcript at a time, full width
with_steps = [row for row in detail if ui.load(transcripts.transcript_size, run_id=row["run_id"],
                                               instance_id=row["instance_id"], trial=row["train_trial_index"])]
if with_steps:
    st.subheader("Transcript")
    names = [row["model"] for row in with_steps]
    warn_unknown("transcript", "model", names)
    who = st.selectbox("Transcript of", names, key="transcript", bind="query-params",
                       disabled=len(names) == 1) if len(names) > 1 else names[0]
    row = next(r for r in with_steps if r["model"] == who)
    transcript.timeline(row, {"step_index": row["step_index"], "agent": row["step_agent"],
                              "quote": row["step_quote"], "analyst": row["analyst"]}
                        if row["error_title"] and row["step_index"] is not None else None)
