"""Shared state kept in the URL by hand, for the filters that span pages.

Streamlit drops a `bind="query-params"` parameter when the user switches pages (it belongs to
the previous page's widget), so the shared filters and the analyst are synced explicitly: the
URL is the source of truth and seeds the widget at the start of every run, and a change to the
widget is written to the URL by its on_change callback, which runs before the rerun. Page-specific
state (a, b, category, instance, ...) uses `bind="query-params"` directly.
"""

from __future__ import annotations

import streamlit as st

from .text import md


def _write(key: str, value, default=None) -> None:
    if value == default or value in ([], "", None):
        if key in st.query_params:
            del st.query_params[key]
    else:
        st.query_params[key] = value


def seed_list(key: str, options: list[str]) -> dict:
    """Set a multiselect's value from a repeated URL parameter; returns the widget kwargs that
    write changes back."""
    raw = st.query_params.get_all(key)
    value = [v for v in dict.fromkeys(raw) if v in options]
    if value != raw:
        _write(key, value)  # drop unknown or repeated values from the link
    st.session_state[key] = value
    return {"key": key, "on_change": lambda: _write(key, st.session_state[key])}


def seed_one(key: str, options: list[str], default: str) -> dict:
    """Set a selectbox's value from a URL parameter (or the default); returns the widget kwargs
    that write changes back."""
    raw = st.query_params.get(key)
    if raw is not None and raw not in options:
        _write(key, None)
    st.session_state[key] = raw if raw in options else default
    return {"key": key, "on_change": lambda: _write(key, st.session_state[key], default)}


def warn_unknown(key: str, noun: str, options: list[str]) -> None:
    """Say so when the link names a `key` value that is not among `options` (the widget then
    drops it), rather than silently showing something else."""
    asked = st.query_params.get(key)
    if asked is not None and asked not in options:
        st.warning(f"The link names {noun} “{md(asked)}”, which is not among those here; pick one "
                   "below.", icon=":material/link_off:")
