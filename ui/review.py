"""Human review of one classification: confirm, relabel or flag; appended to `reviews`."""

from __future__ import annotations

import streamlit as st

import store
from store import queries as q

from .data import active_db, public_message, read_only
from .text import md

_SAVED = "_review_saved"


def panel(row: dict, categories: list[str]) -> None:
    """Show the latest review of this label and, unless read-only, a form to add one."""
    form_key = f"review-{row['run_id']}-{row['instance_id']}"
    if st.session_state.get(_SAVED) == form_key:
        # the confirmation survives the rerun that shows the new review
        st.success("Review saved.", icon=":material/check_circle:")
        del st.session_state[_SAVED]
    if row["review_action"]:
        st.caption(f"Reviewed: {md(row['review_action'])}"
                   + (f" → {md(row['review_category'])}" if row["review_action"] == "relabel" else "")
                   + f" by {md(row['reviewer'])} at {row['reviewed_at']:%Y-%m-%d %H:%M}"
                   + (f" — {md(row['review_note'], 1000)}" if row["review_note"] else ""))
    if read_only() or not row["category"]:
        return
    with st.form(form_key, clear_on_submit=True):
        action = st.radio("Review this label", q.REVIEW_ACTIONS, horizontal=True)
        relabel = st.selectbox("New category (relabel)", categories, index=None)
        note = st.text_input("Note")
        reviewer = st.text_input("Your name")
        if not st.form_submit_button("Save review"):
            return
    if not reviewer.strip():
        st.warning("Add your name so the review says who made it.")
        return
    if action == "relabel" and not relabel:
        st.warning("Pick the new category to relabel.")
        return
    with store.write_session(active_db()) as con:
        q.record_review(con, row["run_id"], row["instance_id"], row["analyst"], action,
                        row["category"], relabel if action == "relabel" else row["category"],
                        note.strip() or None, reviewer.strip())
    st.session_state[_SAVED] = form_key
    st.toast("Review saved.", icon=":material/check_circle:")
    st.rerun()


# ----------------------------------------------------------------- measuring the analyst (taxonomy page)

_SAMPLE = "_review_sample"
_LOADED = "_labels_loaded"
LABEL_TYPES = ("csv", "jsonl")


def sample_csv(sample) -> bytes:
    """The drawn sample as `python -m taxonomy review-sample --out` writes it: the file to fill in
    and load back."""
    from taxonomy.calibration import sample_csv as table

    return table(sample).encode("utf-8")


def _sample_links(sample, f, analyst: str):
    import polars as pl

    from .share import page_url

    links = [page_url("instances", {**f.params(), "models": [m], "analyst": analyst, "instance": f"{d}:{i}"})
             for d, m, i in sample.select("dataset", "model", "instance_id").iter_rows()]
    return sample.drop("run_id", "category").with_columns(open=pl.Series(links, dtype=pl.String))


def _draw(analyst: str, f, n: int) -> None:
    from taxonomy.calibration import review_sample

    try:
        _, sample = review_sample(active_db(), analyst, n, models=f.models, datasets=f.datasets, split=f.split,
                                  thresholds=f.thresholds, record=True)
    except store.FaultlineError as exc:
        st.error(md(public_message(exc.message), 2000))
        return
    st.session_state[_SAMPLE] = (analyst, sample)


def _load_labels(upload, reviewer: str) -> None:
    """Check the upload as every upload is checked (ui/uploads.py: its name, size, UTF-8, line
    length), write it to a folder of its own that is removed afterwards, and load it."""
    import tempfile
    from pathlib import Path

    from taxonomy.labels import load_labels

    from .uploads import UploadRefused, check_upload

    if not reviewer.strip():
        st.warning("Name who made the labels (or give a reviewer column in the table).")
        return
    data = upload.getvalue()
    try:
        name = check_upload(upload.name, data)
        if Path(name).suffix.lower().lstrip(".") not in LABEL_TYPES:
            raise UploadRefused(f"{name}: a label table is a .csv or .jsonl file")
        with tempfile.TemporaryDirectory(prefix="faultline-labels-") as folder:
            path = Path(folder) / name
            path.write_bytes(data)
            try:
                summary = load_labels([path], active_db(), reviewer.strip())
            except store.FaultlineError as exc:
                # the message names the temporary copy: say the upload's name instead
                raise type(exc)(exc.message.replace(str(path), name).replace(folder, "")) from None
    except store.FaultlineError as exc:
        st.error(md(public_message(exc.message), 2000))
        return
    st.session_state[_LOADED] = (f"{summary.labels} labels of {md(upload.name)} loaded as people's labels "
                                 f"({summary.added} added, {summary.already} already there; reviewer "
                                 f"{md(summary.reviewer)}).")
    st.rerun()


def _calibrate(analyst: str) -> None:
    from taxonomy.calibration import calibrate

    try:
        calibrate(active_db(), analyst)
    except store.FaultlineError as exc:
        st.warning(md(public_message(exc.message), 2000))
        return
    st.rerun()


def measure_controls(analyst: str, f) -> None:
    """Draw failures to review (`review_sample`, recorded with its weights), download them to fill
    in, load a filled label table, and calibrate: what `python -m taxonomy review-sample`,
    `labels` and `calibrate` do, from the page. Nothing here on a read-only app."""
    from .tables import show_table

    if read_only():
        st.caption("This dashboard is read-only: reviews are drawn and loaded where the store can be "
                   "written (python -m taxonomy review-sample, labels, calibrate).")
        return
    st.markdown("**1. Propose failures to review.** A seeded random sample of the analyst's failures "
                "under these filters, stratified by its label (failures people labelled already left "
                "out), recorded with its weights so the measurement covers every failure.")
    left, right = st.columns([1, 2], vertical_alignment="bottom")
    n = left.number_input("Failures to draw", min_value=1, max_value=2000, value=50, step=10, key="sample_n")
    if right.button("Propose failures to review", icon=":material/casino:", key="draw_sample"):
        _draw(analyst, f, int(n))
    drawn = st.session_state.get(_SAMPLE)
    if drawn and drawn[0] == analyst:
        sample = drawn[1]
        st.caption(f"{sample.height} failures drawn. Download them, fill in the category column (the "
                   "analyst's category is beside it), and load the file below; or open each one and "
                   "review it on the Instances page — reviews there count as people's labels too.")
        show_table(_sample_links(sample, f, analyst), name="review-sample", hide_index=True, column_config={
            "dataset": "Dataset", "model": "Model", "instance_id": "Question id", "train_trial_index": "Trial",
            "analyst_category": "Analyst's category", "stratum_size": "Failures with this label",
            "stratum_drawn": "Drawn from them", "weight": st.column_config.NumberColumn("Weight", format="%.2f"),
            "open": st.column_config.LinkColumn("Details", display_text="open")})
        st.download_button("Download the sample to fill in (CSV)", sample_csv(sample),
                           file_name="review-sample.csv", mime="text/csv", on_click="ignore",
                           icon=":material/download:", key="sample_csv")
    st.markdown("**2. Load people's labels.** A filled sample, or any label table (.csv or .jsonl: "
                "dataset, model, instance_id, category; optional train_trial_index, reviewer, note).")
    upload = st.file_uploader("Filled label table", type=list(LABEL_TYPES), key="labels_file")
    reviewer = st.text_input("Reviewer (who made the labels)", key="labels_reviewer")
    if st.button("Load labels", icon=":material/upload:", key="load_labels", disabled=upload is None):
        _load_labels(upload, reviewer)
    if st.session_state.get(_LOADED):
        st.success(st.session_state.pop(_LOADED), icon=":material/check_circle:")
    st.markdown("**3. Calibrate.** Measure the analyst on every people's label of its failures, and "
                "correct the shares on every page with it.")
    if st.button("Calibrate", icon=":material/straighten:", key="calibrate"):
        _calibrate(analyst)
