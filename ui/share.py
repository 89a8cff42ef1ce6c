"""The "copy this view" link: the page URL with every piece of state as query parameters."""

from __future__ import annotations

import streamlit as st

from stats.links import query_string


def page_url(page: str, params: dict) -> str:
    """A link to another page relative to this one, e.g. `instances?instance=...`."""
    return page + query_string(params)


def share_link(page: str, params: dict) -> str:
    """Show a copyable link to this view; `params` values may be strings or lists (repeated)."""
    url = (st.context.url or page) + query_string(params)
    with st.sidebar:
        st.caption("Link to this view (copy button on the right)")
        st.code(url, language=None, wrap_lines=True)
    return url
