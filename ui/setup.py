"""Loading logs and analysing failures from the app: first-run setup and the Data page.

Hidden in read-only mode (public links): there the app only reads. Paths typed here are read
only under the configured data roots — every file the load reads, symbolic links followed
(`python -m ingest --only-under`) — uploads only after every safety check passed. What the
inputs hold stays after a submit; the latest job's outcome is one box (its error, in red, when it
failed), earlier jobs are folded away.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import store
from ingest import FORMATS

from . import jobs
from .data import public_message, read_only
from .text import md
from .uploads import UPLOAD_TYPES, UploadRefused, allowed_path, data_roots, save_uploads


def _upload_root(db: Path) -> Path:
    return db.parent / "uploads"


def loader(expanded: bool = False, label: str = "Load logs and analyse failures",
           analyse: bool = True) -> None:
    if read_only():
        return
    db = store.resolve_db_path()
    roots = data_roots(_upload_root(db))
    with st.expander(label, expanded=expanded):
        with st.form("load_logs", clear_on_submit=False):
            path = st.text_input(
                "Path on this machine",
                placeholder="benchmark_output/runs/my-suite, an lm-eval folder, a .eval log, preds.jsonl",
                help="Anything `python -m ingest` reads; several paths separated by ';'. Read only under "
                     + ", ".join(str(r) for r in roots) + " (FAULTLINE_DATA_ROOTS).",
            )
            uploads = st.file_uploader(
                "…or upload files (JSONL/CSV predictions, lm-eval samples, Inspect logs, a HELM suite "
                "or a folder of logs as .zip)",
                type=UPLOAD_TYPES, accept_multiple_files=True,
            )
            fmt = st.selectbox("Format", FORMATS, help="auto recognises each path by what it looks like")
            if st.form_submit_button("Load"):
                _start_ingest(path, uploads or [], fmt, db, roots)
        if analyse:
            analyse_button(caption=True, status=False)
        _job_status()


def analyse_button(caption: bool = False, status: bool = True) -> None:
    """Start the offline analysis of the configured store (not offered on public links)."""
    if read_only():
        return
    db = store.resolve_db_path()
    if not db.exists():
        return
    if caption:
        st.caption(
            "Name and classify the failures without an LLM; for an LLM analyst run "
            "`python -m taxonomy analyze --analyst MODEL` where its API key is set."
        )
    if st.button("Analyse failures offline", disabled=jobs.running(), icon=":material/troubleshoot:"):
        jobs.start("offline analysis", ["taxonomy", "analyze", "--analyst", "offline"], db)
    if status:
        _job_status()


def _start_ingest(path: str, uploads: list, fmt: str, db: Path, roots: list[Path]) -> None:
    uploaded: list[Path] = []
    try:
        paths = [allowed_path(p.strip(), roots) for p in path.split(";") if p.strip()]
        uploaded = save_uploads([(u.name, u.getvalue()) for u in uploads], _upload_root(db))
        paths += uploaded
    except UploadRefused as exc:
        st.error(md(exc.message, 2000), icon=":material/block:")
        return
    if not paths:
        st.warning("Give a path or upload a file first.")
        return
    label = "load " + ", ".join(p.name for p in paths)
    # the job reads nothing outside the roots, whatever links the folders hold
    confined = [arg for root in roots for arg in ("--only-under", str(root))]
    # an upload the load refuses is not kept (its folder: the one save_uploads made for it)
    root = _upload_root(db)
    folders = tuple({root / p.relative_to(root).parts[0] for p in uploaded})
    jobs.start(label, ["ingest", *map(str, paths), "--format", fmt, *confined], db, discard_on_failure=folders)


@st.fragment(run_every=2)
def _job_status() -> None:
    started = jobs.jobs()
    if started:
        job = started[-1]
        say = f"{job.label} — {job.state}"
        if job.returncode is None:
            st.info(md(say + (f": {job.last_line()}" if job.last_line() else ""), 2000),
                    icon=":material/hourglass_top:")
        elif job.returncode == 0:
            st.success(md(f"{say}: {job.last_line()}", 2000), icon=":material/check_circle:")
        else:
            st.error(md(f"{say}: {public_message(job.problem())}", 2000), icon=":material/error:")
        if len(started) > 1:
            with st.expander(f"Earlier jobs ({len(started) - 1})"):
                for earlier in reversed(started[:-1]):
                    said = earlier.problem() if earlier.returncode else earlier.last_line()
                    st.text(f"{earlier.label} — {earlier.state}: {public_message(said)}")
    if started and not jobs.running() and st.session_state.get("_jobs_seen") != len(started):
        # a job just finished: rerun the whole page so it shows the new data
        st.session_state["_jobs_seen"] = len(jobs.jobs())
        st.rerun()
