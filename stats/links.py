"""Links to the dashboard view that shows the same numbers: the page's URL path with every piece
of its state as query parameters (docs/dashboard.md lists them). The app's "link to this view"
and the agents' answers (mcp_server/answers.py) build them here, so both follow the same rules."""

from __future__ import annotations

import os
from urllib.parse import urlencode

BASE_URL_ENV = "FAULTLINE_BASE_URL"
# where `streamlit run app.py` serves by default
DEFAULT_BASE_URL = "http://localhost:8501"


def query_string(params: dict) -> str:
    """`?k=v&k=w` from a dict whose values are strings or lists (repeated); empty values skipped."""
    pairs = []
    for key, value in params.items():
        if value in (None, "", []):
            continue
        pairs += [(key, v) for v in value] if isinstance(value, list) else [(key, value)]
    return "?" + urlencode(pairs) if pairs else ""


def base_url(explicit: str | None = None) -> str:
    """The dashboard's address: `explicit` (a --base-url flag), else $FAULTLINE_BASE_URL, else
    Streamlit's default http://localhost:8501; without a trailing slash."""
    return (explicit or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")


def view_url(base: str, page: str, params: dict) -> str:
    """The absolute URL of `page` ("" for the overview, "compare", "instances", ...) in that state."""
    return f"{base}/{page}{query_string(params)}"
