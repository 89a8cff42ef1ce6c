"""The analysis threshold in a real browser (Debian chromium via Playwright on `streamlit run`):
moving a dataset's line in the sidebar writes it into the URL, re-judges the page without a
re-ingest, and a copied link opens on the same line."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest
from browser_kit import CHROMIUM, chromium, settled, streamlit_app
from playwright.sync_api import expect

from ingest import ingest_paths
from tests.headline_suites import jury_suite

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                       reason="Debian chromium is not installed (apt-get install chromium)"),
]


def test_moving_the_threshold_in_the_sidebar_rejudges_and_the_link_keeps_it(tmp_path):
    db = tmp_path / "jury.duckdb"
    ingest_paths([jury_suite(tmp_path)], db=db)
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT count(*) FILTER (WHERE NOT is_correct) FROM predictions").fetchall()
    env = {**os.environ, "FAULTLINE_DB": str(db)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.goto(base + "/")
        settled(page)
        main = page.locator("[data-testid='stMain']")
        assert "failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range" in main.inner_text()
        page.get_by_text("Analysis threshold").first.click()
        sidebar = page.locator("[data-testid='stSidebar']")
        # the expander draws its fields a moment after the click: wait for them, do not read at once
        expect(sidebar).to_contain_text("aci_bench: fail below (aci_bench_accuracy, 1–5)", timeout=30_000)
        field = sidebar.locator("input[type='number']").first  # aci_bench, then med_dialog
        assert field.input_value() == "3.80"
        field.fill("4.5")
        field.press("Enter")
        page.wait_for_function("() => window.location.search.includes('threshold=aci_bench')")
        settled(page)
        page.wait_for_timeout(500)
        assert "threshold=aci_bench%3A4.5" in page.url
        text = main.inner_text()
        assert "failures: score < 4.5 of 1–5 — set for this view, 0.875 of the range" in text
        assert "failures: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range" in text  # med_dialog keeps its line
        # a shared link opens on the same line
        other = browser.new_page(viewport={"width": 1280, "height": 1000})
        other.goto(page.url)
        settled(other)
        # a link that moves a line opens with the expander open (a click would fold it)
        # (once the page has settled on the link's parameters: the value, not an intermediate render)
        expect(other.locator("[data-testid='stSidebar'] input[type='number']").first).to_have_value("4.50",
                                                                                                 timeout=30_000)
        assert other.locator("[data-testid='stException']").count() == 0
    # nothing was re-ingested or re-judged in the store
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FILTER (WHERE NOT is_correct) FROM predictions").fetchall() == stored
