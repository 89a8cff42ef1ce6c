"""How pages read the store: through a cache keyed on the store's data version.

No page holds a connection of its own: a cache miss runs one query function on a read-only
connection that lingers for READ_LINGER_S after its last query (store/db.py), so the queries of
one page share it, and lets go at once when a CLI announces that it wants to write. The cache key
includes `store.data_version`, which changes whenever a writer commits, so new data shows up on
the next rerun without clearing anything.

Every query function runs in a worker thread with a deadline (FAULTLINE_QUERY_TIMEOUT, 60 s):
past it the query is interrupted (DuckDB's `interrupt`) and the page shows an error at once, so
no session waits on one slow view; Python work left running finishes in the background.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

import duckdb
import streamlit as st

import store
from core.numbers import NumberError, decimal_number



READ_LINGER_S = 1.0
QUERY_TIMEOUT_ENV = "FAULTLINE_QUERY_TIMEOUT"
_WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="faultline-query")


def query_timeout() -> float:
    """FAULTLINE_QUERY_TIMEOUT in seconds (ASCII digits, core.numbers: float() takes "nan" and
    "inf"); a value that is not a number is said in the server's log and the default used."""
    raw = os.environ.get(QUERY_TIMEOUT_ENV)
    if raw is None or not raw.strip():
        return 60.0
    try:
        return max(decimal_number(raw, QUERY_TIMEOUT_ENV, what="a number of seconds"), 0.1)
    except NumberError as exc:
        print(f"warning: {exc.message}; queries are given 60 s", file=sys.stderr)
        return 60.0


def run_bounded(db: str | Path, fn: Callable, **kwargs) -> Any:
    """`fn(con, **kwargs)` on a read connection, given at most `query_timeout()` seconds."""
    upgrade = not read_only()  # an older store is upgraded, unless this app may not write
    opened: list = []

    def work() -> Any:
        with store.read_connection(db, linger=READ_LINGER_S, upgrade=upgrade) as con:
            opened.append(con)
            try:
                return fn(con, **kwargs)
            except duckdb.Error as exc:
                if isinstance(exc, duckdb.InterruptException):
                    raise
                # a damaged file (a checksum that does not match), a store of another shape:
                # said as a message, not a traceback with the server's paths
                first = " ".join(str(exc).split()) or type(exc).__name__
                raise store.StoreError(f"{db}: the store could not be read ({first[:500]})") from None

    future = _WORKERS.submit(work)
    timeout = query_timeout()
    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()  # still queued behind other sessions' queries: never started
        for con in opened:
            con.interrupt()
        raise store.StoreError(
            f"this view took longer than {timeout:g} s to compute and was stopped; narrow the filters, "
            f"or raise {QUERY_TIMEOUT_ENV}") from None


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(module: str, name: str, db: str, version: tuple, kwargs: dict) -> Any:
    return run_bounded(db, getattr(importlib.import_module(module), name), **kwargs)


@st.cache_resource(show_spinner="Building the demo store (made-up DEMO logs, analysed offline)…")
def _demo_store(fingerprint: str) -> Path:
    from demo import ensure_demo

    return ensure_demo()


def active_db() -> Path:
    """The store pages read: the configured one once it exists, else the DEMO store (built on
    first use from data/demo), so a first start shows every page working. Read-only, nothing is
    built: the demo store is shown when it exists, else `require_data` says there is no store. A
    store at a URL is read from its verified local copy; when there is none to be had the page
    says why and stops."""
    if store.is_remote_db():
        from store import remote

        # a page never waits past its query deadline for a download (store/remote.py)
        remote.serve_pages(query_timeout())
    try:
        db = store.resolve_db_path()
    except store.FaultlineError as exc:
        shown = _SERVER_FOLDER.sub("", exc.message) if read_only() else exc.message
        st.error(f"The store could not be read: {shown}", icon=":material/cloud_off:")
        st.stop()
    if db.exists() or store.is_remote_db():
        return db
    from demo import DEMO_DB, fingerprint

    if read_only():
        return DEMO_DB
    try:
        return _demo_store(fingerprint())
    except (OSError, store.FaultlineError) as exc:
        # e.g. data/ cannot be written: say so, without a traceback
        why = exc.message if isinstance(exc, store.FaultlineError) else f"{exc.strerror or exc}"
        st.error(public_message(f"{db} does not exist, and the demo store could not be built: {why}. "
                                "Load logs with `python -m ingest PATH`, or set FAULTLINE_DB."))
        st.stop()


def is_demo() -> bool:
    return active_db() != store.resolve_db_path()


# a folder path on the server: absolute (POSIX or a drive), not part of a URL (after "scheme:" or a host)
_SERVER_FOLDER = re.compile(r"(?<![\w:/.])(?:[A-Za-z]:)?[/\\](?:[^\s\"'`/\\]+[/\\])+")


def public_message(message: str) -> str:
    """A message fit to show: in read-only mode (a public link) server paths are cut to names
    (the store's folder, and any other absolute path a message carries: DuckDB's own errors)."""
    if not read_only():
        return message
    for path in {active_db(), *(() if store.is_remote_db() else (store.resolve_db_path(),))}:
        message = message.replace(str(path.parent) + os.sep, "").replace(str(path.parent), "")
    return _SERVER_FOLDER.sub("", message)


def cached(fn: Callable, db: Path, **kwargs) -> Any:
    """`fn(con, **kwargs)` on the store at `db`, from the cache while the store is unchanged;
    its errors are raised (`load` shows them)."""
    return _cached(fn.__module__, fn.__name__, str(db), store.data_version(db), kwargs)


def load(fn: Callable, **kwargs) -> Any:
    """`fn(con, **kwargs)` from the cache, or from a fresh read-only connection.

    A user-facing error (the store locked for too long, an unknown model) stops the page with
    its message instead of a traceback.
    """
    try:
        return cached(fn, active_db(), **kwargs)
    except store.FaultlineError as exc:
        st.error(public_message(exc.message))
        st.stop()


OFFLINE_CAVEAT = (
    "Labels by the **offline analyst**: fixed rules over what the log holds (the output, the "
    "references and options, the run's instructions, the judges' notes, where generation "
    "stopped), no language model. It names an error only on unambiguous evidence and otherwise "
    "says Hard to Analyze. Measured on labelled failures its rules were not written against, "
    "83% of its specific labels (No Model Error included) match a person's and it abstains on 52% "
    "(60 written failures; 11 of 13 right, 35% abstained, on 20 real ones); on the "
    "LLM-as-a-qualitative-judge study's 297 failures, 73% right and 52% abstained. A failure whose "
    "cause the log does not show (a bare option letter, a wrong answer with no working) can only "
    "be Hard to Analyze. For labels to cite, analyse with an LLM (python -m taxonomy analyze "
    "--analyst openai/gpt-4o-mini) and check them against reviews on the Taxonomy page.")


def analyst_caveat_text(analyst: str) -> str | None:
    """`taxonomy.calibration.analyst_caveat` for this analyst, from the cache (None when the
    store cannot say: the page goes on without it rather than stopping)."""
    from taxonomy.calibration import analyst_caveat

    try:
        return cached(analyst_caveat, active_db(), analyst=analyst)
    except store.FaultlineError as exc:
        print(f"warning: the analyst's calibration could not be read: {exc.message}", file=sys.stderr)
        return None


def offline_caveat(analyst: str | None) -> None:
    """Say what an analyst's labels are worth, wherever its labels are shown: how far people's
    labels measured it (`taxonomy.calibration.analyst_caveat`, as text: it names the analyst and
    the store's versions), and for the offline analyst what its rules can and cannot see."""
    if not analyst:
        return
    text = analyst_caveat_text(analyst)
    if text:
        from .text import md

        st.caption(":material/fact_check: " + md(text, 2000))
    if analyst == "offline" or analyst.startswith("offline/"):
        st.caption(":material/info: " + OFFLINE_CAVEAT)


def read_only() -> bool:
    """Public links run read-only: no review writes (env FAULTLINE_READ_ONLY=1 or secret); so
    does a store at a URL, which nothing here can write."""
    if os.environ.get("FAULTLINE_READ_ONLY", "").lower() in ("1", "true", "yes") or store.is_remote_db():
        return True
    try:
        return bool(st.secrets.get("read_only", False))
    except FileNotFoundError:
        return False


def report_html(filters) -> Callable[[], str]:
    """The static HTML report for these filters, built only when the download is clicked."""

    def build() -> str:
        from stats.report import build_report

        html, _ = run_bounded(active_db(), build_report, models=filters.models, datasets=filters.datasets,
                              domains=filters.domains, thresholds=filters.thresholds)
        return html

    return build
