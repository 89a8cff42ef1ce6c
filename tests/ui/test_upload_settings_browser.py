"""Issue 23, item 9, in a real browser (Debian chromium on `streamlit run`): an uploaded table of
averaged 1-3 ratings needs a scale; the page shows the whole message, every line of it inside the
red box and none cut off, and the fields to give the scale; filled in, the upload loads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from browser_kit import CHROMIUM, chromium, settled, streamlit_app
from conftest import ROOT, q
from load_panel import RATINGS

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                       reason="Debian chromium is not installed (apt-get install chromium)"),
]
SHOTS = Path(os.environ.get("FAULTLINE_SCREENSHOTS", "")) if os.environ.get("FAULTLINE_SCREENSHOTS") else None


def test_an_upload_that_needs_a_scale_finishes(tmp_path):
    import store

    db = tmp_path / "store.duckdb"
    with store.write_session(db):
        pass  # an empty store: the page opens on the load panel
    (tmp_path / "logs").mkdir()
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text("".join(json.dumps(r) + "\n" for r in RATINGS))
    env = {**os.environ, "FAULTLINE_DB": str(db),
           "FAULTLINE_DATA_ROOTS": f"{tmp_path / 'logs'}{os.pathsep}{tmp_path / 'uploads'}"}
    env.pop("FAULTLINE_READ_ONLY", None)
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 1300})
        page.goto(base)
        settled(page)
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(ratings))
        page.locator("[data-testid='stBaseButton-secondaryFormSubmit']").first.click()
        page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60_000)
        page.wait_for_selector("input[aria-label='rated: lowest score possible']", timeout=30_000)
        settled(page)
        box = page.locator("[data-testid='stAlertContentError']")
        text = box.inner_text()
        # the whole message, not cut after its colon: the first line, then the dataset's own line
        assert "load ratings.jsonl — failed (exit 2): no verdicts without a scale, and Faultline does not guess one:" in text
        assert "rated: score (" in text and "Give its scale with --scale rated=LOW:HIGH" in text
        assert text.rstrip().endswith("or the line itself with --pass-threshold rated=X")
        assert text.index("does not guess one:") < text.index("rated: score")
        # every line of it inside the red box: the text's own extent lies within the box's
        text_box, red_box = box.evaluate("""e => {
            const range = document.createRange();
            range.selectNodeContents(e.querySelector("[data-testid='stMarkdownContainer']"));
            const t = range.getBoundingClientRect(), b = e.closest("[data-testid='stAlertContainer']").getBoundingClientRect();
            return [[t.left, t.top, t.right, t.bottom], [b.left, b.top, b.right, b.bottom]]; }""")
        assert red_box[0] <= text_box[0] and red_box[1] <= text_box[1], (text_box, red_box)
        assert text_box[2] <= red_box[2] and text_box[3] <= red_box[3], (text_box, red_box)
        assert red_box[2] <= 1280
        inside = box.bounding_box()
        for field in ("rated: lowest score possible", "rated: highest score possible", "rated: or pass at this score"):
            where = page.locator(f"input[aria-label='{field}']").bounding_box()
            assert where and where["width"] > 60 and where["x"] + where["width"] <= 1280
            assert where["y"] > inside["y"] + inside["height"]  # the fields come after the message
        if SHOTS:
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "upload-needs-scale-1280.png"), full_page=True)
        page.locator("input[aria-label='rated: lowest score possible']").fill("1")
        page.locator("input[aria-label='rated: highest score possible']").fill("3")
        page.get_by_role("button", name="Load again with these settings").click()
        page.wait_for_selector("[data-testid='stMetric']", timeout=90_000)  # the overview, once the data is in
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0
        metrics = dict(zip(page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                           page.locator("[data-testid='stMetricValue']").all_inner_texts()))
        assert metrics["Runs"] == "2" and metrics["Loaded predictions"] == "8", metrics
    assert q(db, "SELECT DISTINCT metric_min, metric_max, pass_threshold FROM runs") == [(1.0, 3.0, 2.4)]
    assert q(db, "SELECT count(*) FILTER (WHERE is_correct) FROM outcomes") == [(3,)]
    shutil.rmtree(tmp_path / "uploads")
