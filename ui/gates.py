"""What a page shows before its view, when there is nothing to view yet: no store (the demo, or
the load panel), a store at a URL (where it comes from), no analyses (the button to analyse).
Each stops the page (`st.stop`) when the view cannot follow."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import store
from store import queries as q

from . import setup
from .data import active_db, cached, is_demo, load, public_message, read_only
from .text import md


def _how(db: Path) -> str:
    where = f" into `{db}`" if not read_only() else ""
    return (
        f"Load benchmark logs{where}:\n\n"
        "```\npython -m ingest PATH            # HELM run dirs, lm-eval samples, Inspect logs, JSONL/CSV\n"
        "python -m taxonomy analyze --analyst offline   # name and classify the failures\n```\n\n"
        "Set `FAULTLINE_DB` (or pass `--db` to the commands) to use another database file."
    )


def _demo_banner() -> None:
    with st.container(border=True):
        st.warning(
            "**DEMO DATA.** You are looking at made-up logs: four invented models (`demo/...`) "
            "on four small invented datasets, written by `data/demo/generate.py` and analysed "
            "offline. The failure patterns were planted to show what Faultline does; none of "
            "it is a real model's output.",
            icon=":material/science:",
        )
        if read_only():
            return
        left, right = st.columns([1, 2])
        if left.button("Start with an empty store", icon=":material/delete_sweep:",
                       help=f"Create {store.resolve_db_path().name} and leave the demo"):
            with store.write_session():
                pass
            st.rerun()
        with right:
            setup.loader(label="Load your own logs instead", analyze=False)


def require_data() -> None:
    """Stop the page with instructions when the store holds no runs; on a first start (no
    database yet) show the demo store under a banner."""
    db = store.resolve_db_path() if not store.is_remote_db() else active_db()
    if is_demo():
        if not active_db().exists():  # read-only: no demo is built here
            st.info(f"**There is no store to show.** {public_message(str(db))} does not exist, and this "
                    "dashboard is read-only: it builds and loads nothing. Whoever runs it loads logs with "
                    "`python -m ingest PATH`.")
            st.stop()
        _demo_banner()
        return
    if store.is_remote_db():
        _remote_source()
    try:
        loaded = cached(q.has_data, db)
    except store.EmptyStoreError:
        loaded = False  # a 0-byte or never set-up file, as a killed first ingest leaves it
    except store.FaultlineError as exc:
        st.error(public_message(exc.message))
        st.stop()
    if not loaded:
        st.info(f"**The database holds no runs yet.** {_how(db)}")
        setup.loader(expanded=True, analyze=False)  # nothing to analyse yet
        st.stop()


def _remote_source() -> None:
    """Say where a store at a URL comes from, and when its copy may be out of date."""
    from store.remote import source

    found = source(store.db_spec())
    st.caption(f":material/cloud_download: Read-only: {md(found.line())}.")
    if found.note:
        st.warning(md(found.note), icon=":material/cloud_off:")


def no_analyses(stop: bool = True, scope: str = "matching these filters") -> None:
    """The empty state of every view that needs analysed failures, with the button to analyse;
    it says so when the store does hold analyses, only none `scope`."""
    everywhere = load(q.analysts, split=q.ALL_SPLITS)
    held = int(everywhere["analysed"].sum()) if not everywhere.is_empty() else 0
    how = "```\npython -m taxonomy analyze --analyst offline\n```"
    if held:
        st.info(f"No failure {scope} is analysed yet; the store holds {held:,} analysed "
                f"failures outside that (clear or change the filters to see them). Analyse the "
                f"rest with\n\n{how}")
    else:
        st.info(f"No failures analysed yet. Name and classify them with\n\n{how}")
    setup.analyze_button()
    if stop:
        st.stop()


# the measured figures of docs/analysis.md ("How well it agrees with people"), offline-v5
