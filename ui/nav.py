"""Navigation that carries the shared filters from page to page, and each page's title and icon.

Streamlit's built-in page menu clears the query string when it switches pages, which would drop
the shared filters, so the menu is hidden (.streamlit/config.toml) and replaced by links that
pass the filters along. Icons in the page are Material symbols drawn with the font Streamlit
ships and serves itself, not emoji (boxes where no emoji font is installed). The browser tab's
icon is a file of ours: Streamlit turns a `:material/...:` page icon into a link to Google's
font server, which would make every page fetch from outside the host.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

FAVICON = str(Path(__file__).resolve().parent / "assets" / "favicon.png")

PAGES = [
    ("app.py", "Overview", ":material/dashboard:"),
    ("pages/signatures.py", "Signatures", ":material/fingerprint:"),
    ("pages/compare.py", "Compare", ":material/compare_arrows:"),
    ("pages/slices.py", "Slices", ":material/view_column:"),
    ("pages/instances.py", "Instances", ":material/list_alt:"),
    ("pages/taxonomy.py", "Taxonomy", ":material/account_tree:"),
    ("pages/data.py", "Data", ":material/database:"),
]


def configure_page(path: str, heading: str) -> None:
    """The browser tab's title and icon and the page heading, the same way on every page."""
    label = next(lbl for p, lbl, _ in PAGES if p == path)
    st.set_page_config(page_title=f"{label} · Faultline", page_icon=FAVICON, layout="wide")
    # also in .streamlit/config.toml, which `streamlit run` reads only from the folder it starts in:
    # Streamlit's own table export writes model text unescaped (ui/tables.py offers an inert one),
    # and an error a page did not catch shows its type, never a traceback with server paths
    st.set_option("client.disableDataExport", True)
    st.set_option("client.showErrorDetails", "type")
    st.title(heading)


def menu(params: dict[str, list[str]]) -> None:
    for path, label, icon in PAGES:
        st.page_link(path, label=label, icon=icon, query_params=params)
