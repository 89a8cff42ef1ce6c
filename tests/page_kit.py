"""The app's pages under Streamlit's AppTest: a page run with its URL parameters, and its charts."""

from __future__ import annotations

from conftest import ROOT
from streamlit.testing.v1 import AppTest


def run_page(page: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if page:
        at.switch_page(page)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at) -> list:
    return at.get("vega_lite_chart")
