"""Loading logs and analysing failures from the app: first-run setup and the Data page.

Hidden in read-only mode (public links): there the app only reads. Paths typed here are read
only under the configured data roots — every file the load reads, symbolic links followed
(`python -m ingest --only-under`) — uploads only after every safety check passed. What the
inputs hold stays after a submit; the latest job's outcome is one box (its whole error, in red,
when it failed), earlier jobs are folded away. A load that stopped for want of a scale, a
threshold or a main metric gets the fields to give them and runs again with them; one that found
no column for a field of a table (its id, its output, its score) gets the table's columns to pick
from (the CLI's --map FIELD=COLUMN), with the model's name and the score's scale.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import streamlit as st

import store
from ingest import FORMATS
from ingest.sources import custom

from . import jobs
from .data import public_message, read_only
from .text import md, md_lines, visible
from .uploads import UPLOAD_TYPES, UploadRefused, allowed_path, data_roots, save_uploads


def _upload_root(db: Path) -> Path:
    return db.parent / "uploads"


def loader(expanded: bool = False, label: str = "Load logs and analyse failures",
           analyze: bool = True) -> None:
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
                "…or upload files (JSONL/CSV/Excel predictions, lm-eval samples, Inspect logs, a HELM "
                "suite or a folder of logs as .zip)",
                type=UPLOAD_TYPES, accept_multiple_files=True,
            )
            fmt = st.selectbox("Format", FORMATS, help="auto recognises each path by what it looks like")
            if st.form_submit_button("Load"):
                _start_ingest(path, uploads or [], fmt, db, roots)
        if analyze:
            analyze_button(caption=True, status=False)
        _job_status()
        _settings_asked(db)


def analyze_button(caption: bool = False, status: bool = True) -> None:
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
    # an upload the load refuses is not kept (its folder: the one save_uploads made for it),
    # unless the load only asks for a setting the page then offers
    root = _upload_root(db)
    folders = tuple({root / p.relative_to(root).parts[0] for p in uploaded})
    jobs.start(label, ["ingest", *map(str, paths), "--format", fmt, *confined], db, discard_on_failure=folders)


ASK_LABELS = {"--main-metric": "the metric that decides pass/fail"}


def _settings_asked(db: Path) -> None:
    """When the latest load stopped for want of a scale, a threshold or a main metric (the asks
    its command wrote in its result file, ui/jobs.py), the fields to give them, and a button that
    runs the same load again with them."""
    started = jobs.jobs()
    job = started[-1] if started else None
    if job is None or job.returncode in (None, 0) or job.args[:1] != ["ingest"]:
        return
    asks = [a for a in job.asks() if a.flag != "--map"]
    columns_asked = [a.key for a in job.asks() if a.flag == "--map"]
    if columns_asked:
        _columns_asked(job, columns_asked, db)
    if not asks:
        return
    by_dataset: dict[str, set[str]] = {}
    for ask in asks:
        by_dataset.setdefault(ask.key, set()).add(ask.flag)
    given: dict[str, dict[str, object]] = {}
    with st.form(f"asked_{job.log.stem}", border=True):
        st.markdown("**This load needs a setting for each dataset below.** Give it here and load again "
                    "(the same files, with these flags); the message above says why.")
        for n, (dataset, flags) in enumerate(by_dataset.items()):
            name = md(dataset, 80)
            values = given[dataset] = {}
            columns = st.columns(3)
            if "--scale" in flags:
                values["low"] = columns[0].number_input(f"{name}: lowest score possible", value=None,
                                                        format="%g", key=f"{job.log.stem}-{n}-low")
                values["high"] = columns[1].number_input(f"{name}: highest score possible", value=None,
                                                         format="%g", key=f"{job.log.stem}-{n}-high")
            if "--pass-threshold" in flags:
                values["threshold"] = columns[2].number_input(
                    f"{name}: or pass at this score", value=None, format="%g", key=f"{job.log.stem}-{n}-x",
                    help="the line itself instead of a scale: a score at or above it passes")
            if "--main-metric" in flags:
                values["metric"] = st.text_input(f"{name}: {ASK_LABELS['--main-metric']}",
                                                 key=f"{job.log.stem}-{n}-metric",
                                                 placeholder="a scorer or metric the message names (SCORER/FIELD for a field)")
        submitted = st.form_submit_button("Load again with these settings", icon=":material/replay:")
    if submitted:
        _load_again(job, given, db)


# the fields a table's column can be read as, in the words the form uses (the CLI's --map FIELD)
FIELD_LABELS = {"instance_id": "Question id", "output": "Model output", "model": "Model",
                "score": "Score (a number)", "correct": "Verdict (true/false)",
                "reference": "Reference answer", "input": "Input (the question)"}
OPTIONAL_FIELDS = ("reference", "input")


def _table_columns(job: jobs.Job) -> list[str]:
    """The columns of the tables the job loads (its paths: the arguments before the first flag)."""
    paths = [Path(a) for a in itertools.takewhile(lambda a: not a.startswith("--"), job.args[1:])]
    return list(dict.fromkeys(c for p in paths for c in custom.header(p)))


def _columns_asked(job: jobs.Job, fields: list[str], db: Path) -> None:
    """When the latest load found no column for a field (a table whose id is `item`, whose output
    is `response`), a column to pick for each — the CLI's --map FIELD=COLUMN — with the model's name
    (--model) and the score's scale (--scale LOW:HIGH), and a button that loads it again with them."""
    found = _table_columns(job)
    if not found:
        return
    wanted = list(dict.fromkeys([*fields, *OPTIONAL_FIELDS]))
    key = job.log.stem
    with st.form(f"columns_{key}", border=True):
        st.markdown("**Which column holds what?** Pick a column for each field the load asks for and load again "
                    "(the same files, with `--map FIELD=COLUMN` for each).")
        picked: dict[str, str | None] = {}
        for n, field in enumerate(wanted):
            if n % 2 == 0:
                row = st.columns(2)  # a row at a time: the fields read left to right, then down
            optional = field not in fields or field in ("score", "correct")
            label = FIELD_LABELS.get(field, field) + (" — optional" if field in OPTIONAL_FIELDS else "")
            picked[field] = row[n % 2].selectbox(
                f"{label} ({field})", found, index=None, key=f"{key}-map-{field}", format_func=visible,
                placeholder="pick a column" if not optional else "pick a column, or leave empty",
                help="score or verdict: one of the two" if field in ("score", "correct") else None)
        model = st.text_input("…or one model name for every row (--model)", key=f"{key}-model") \
            if "model" in fields else ""
        scale = st.columns(2) if "score" in fields else None
        low = scale[0].number_input("Lowest score possible (--scale)", value=None, format="%g",
                                    key=f"{key}-low") if scale else None
        high = scale[1].number_input("Highest score possible", value=None, format="%g",
                                     key=f"{key}-high") if scale else None
        submitted = st.form_submit_button("Load again with these columns", icon=":material/replay:")
    if submitted:
        extra = _column_flags(fields, picked, model.strip(), low, high)
        if extra is None:
            return
        jobs.start(f"{job.label} with {' '.join(extra[1::2])}", [*job.args, *extra], db,
                   discard_on_failure=job.discard)
        st.rerun()


def _column_flags(fields: list[str], picked: dict[str, str | None], model: str, low, high) -> list[str] | None:
    """The flags the columns form gives, or None after saying what is missing or wrong."""
    missing = [FIELD_LABELS.get(f, f) for f in fields
               if f not in ("score", "correct", "model") and not picked.get(f)]
    if "model" in fields and not picked.get("model") and not model:
        missing.append("Model (a column, or a name)")
    if {"score", "correct"} & set(fields) and not (picked.get("score") or picked.get("correct")):
        missing.append("Score or Verdict")
    if missing:
        st.warning(md("Pick a column for: " + ", ".join(missing), 600))
        return None
    if (low is None) != (high is None) or (low is not None and not low < high):
        st.error("Give the lowest and the highest score possible, the lowest below the highest (or neither).")
        return None
    extra = [arg for field, column in picked.items() if column for arg in ("--map", f"{field}={column}")]
    if model and not picked.get("model"):
        extra += ["--model", model]
    if low is not None:
        extra += ["--scale", f"{low:g}:{high:g}"]
    return extra


def _load_again(job: jobs.Job, given: dict[str, dict[str, object]], db: Path) -> None:
    extra: list[str] = []
    for dataset, values in given.items():
        low, high, threshold = values.get("low"), values.get("high"), values.get("threshold")
        metric = (values.get("metric") or "").strip()
        if (low is None) != (high is None):
            st.error(md(f"{dataset}: give both the lowest and the highest score, or neither"))
            return
        if low is not None:
            if not low < high:
                st.error(md(f"{dataset}: the lowest score must be below the highest"))
                return
            extra += ["--scale", f"{dataset}={low:g}:{high:g}"]
        if threshold is not None:
            extra += ["--pass-threshold", f"{dataset}={threshold:g}"]
        if metric:
            extra += ["--main-metric", f"{dataset}={metric}"]
    if not extra:
        st.warning("Give at least one setting first.")
        return
    # the same files: an upload kept for this retry is discarded if the retry fails for good
    jobs.start(f"{job.label} with {' '.join(extra[1::2])}", [*job.args, *extra], db,
               discard_on_failure=job.discard)
    st.rerun()


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
            # the whole message: a refusal names each dataset on a line of its own
            st.error(md_lines(f"{say}: {public_message(job.problem())}"), icon=":material/error:")
        if len(started) > 1:
            with st.expander(f"Earlier jobs ({len(started) - 1})"):
                for earlier in reversed(started[:-1]):
                    said = earlier.problem() if earlier.returncode else earlier.last_line()
                    st.text(visible(f"{earlier.label} — {earlier.state}: {public_message(said)}"))
    if started and not jobs.running() and st.session_state.get("_jobs_seen") != len(started):
        # a job just finished: rerun the whole page so it shows the new data
        st.session_state["_jobs_seen"] = len(jobs.jobs())
        st.rerun()
