"""The static report: one file whose charts render in chromium with the network cut off, and
whose model text stays text."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import q, run_module
from tests.seed_store import seed

CHROMIUM = "/usr/bin/chromium"
HOSTILE = "ok\n\n# injected heading\n<img src=http://127.0.0.1:9/x> [link](http://example.invalid) <script>alert(1)</script>"

browser = pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                             reason="Debian chromium is not installed (apt-get install chromium)")


def _open_offline(path: Path) -> dict:
    """Open the file in chromium with every network request aborted; what rendered."""
    from playwright.sync_api import sync_playwright

    requested = []

    def block(route):
        requested.append(route.request.url)
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            route.abort()

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = b.new_page()
            page.route("**/*", block)
            page.goto(path.as_uri())
            charts = page.locator("svg.chart")
            boxes = [charts.nth(i).bounding_box() for i in range(charts.count())]
            return {
                "charts": len(boxes),
                "drawn": sum(1 for bx in boxes if bx and bx["width"] > 100 and bx["height"] > 50),
                "marks": page.locator("svg.chart rect, svg.chart circle").count(),
                "h1": page.locator("h1").all_inner_texts(),
                "img": page.locator("img").count(),
                "links": page.locator("a[href]").count(),
                "scripts": page.locator("script").count(),
                "external": [u for u in requested if not u.startswith("file://")],
            }
        finally:
            b.close()


# error types first, most failures first; labels that are not error types after them
_LEADING = ("SELECT category, count(*) AS n FROM failures WHERE analyst = 'offline' AND category IS NOT NULL "
            "GROUP BY 1 ORDER BY category IN ('Other', 'Hard to Analyze', 'No Model Error'), n DESC, category LIMIT 5")


@browser
def test_report_charts_render_with_the_network_cut_off(demo_db, tmp_path):
    out = tmp_path / "report.html"
    proc = run_module("stats", "report", "--db", demo_db, "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"wrote {out}: 4 models, 6 comparisons, analyst offline"
    html = out.read_text()
    assert "<script" not in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    seen = _open_offline(out)
    # results (one per dataset: 4) + signature heatmap (1) + one Δ-share chart per pair of the 4 models (6)
    assert seen["charts"] == seen["drawn"] == 11
    assert html.count("<h3 class=dataset>") == 4
    # 16 result dots + the 4 × 7 heatmap cells + a dot per category per pair
    assert seen["marks"] > 16 + 28 + 6
    assert seen["external"] == [] and seen["scripts"] == 0
    assert "Example failures of the leading categories" in html
    assert html.count("<h3 class=category>") == 5 and html.count("<div class=example>") == 15
    # the leading categories, most failures first (as the demo store counts them)
    heads = re.findall(r"<h3 class=category>(.+?) \((\d+) failures?\)</h3>", html)
    assert [c for c, _ in heads] == [c for c, _ in q(demo_db, _LEADING)]
    assert [int(n) for _, n in heads] == [n for _, n in q(demo_db, _LEADING)]
    assert "<mark>" in html  # evidence quotes marked in the outputs


@browser
def test_hostile_text_in_the_report_stays_text(tmp_path):
    db = tmp_path / "hostile.duckdb"
    rows = []
    for i in range(6):
        rows.append(dict(model="evil <b>model</b>", dataset="ds", instance_id=f"q{i}", is_correct=i > 3,
                         output=HOSTILE, input=HOSTILE, title=f"title {HOSTILE}", category="Refusal"))
        rows.append(dict(model="plain", dataset="ds", instance_id=f"q{i}", is_correct=i < 4,
                         output="fine", title="t2", category="Factual Error"))
    seed(db, rows)
    out = tmp_path / "report.html"
    proc = run_module("stats", "report", "--db", db, "--out", out, timeout=300)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "<img" not in html and "<b>model</b>" not in html and "<script>" not in html
    assert "&lt;img src=http://127.0.0.1:9/x&gt;" in html
    seen = _open_offline(out)
    assert seen["h1"] == ["Faultline report"]
    assert seen["img"] == 0 and seen["links"] == 0 and seen["scripts"] == 0 and seen["external"] == []


def test_app_download_is_the_same_report_for_the_filters(demo_db, monkeypatch):
    from ui import Filters, report_html

    monkeypatch.setenv("FAULTLINE_DB", str(demo_db))
    html = report_html(Filters(models=["demo/atlas-7b", "demo/atlas-70b"]))()
    assert html.count('<svg class="chart"') == 6  # results (one per dataset: 4), signatures, the one pair
    assert "demo/atlas-70b (A) vs demo/atlas-7b (B)" in html and "demo/cirrus-8b" not in html
