"""Issue 17, item 4, in a real browser (Debian chromium on `streamlit run`): a HELM suite uploaded
as a .zip is unpacked and loaded; an upload's real problem — a valid JSON file of the wrong
shape is not "not JSON" — comes back in one red box that does not pile up; what the user typed
stays in the form after a submit."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from browser_kit import CHROMIUM, chromium, settled, streamlit_app
from conftest import MMLU_SUITE, ROOT, q, requires_fixtures

pytestmark = [
    pytest.mark.browser,
    requires_fixtures,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                       reason="Debian chromium is not installed (apt-get install chromium)"),
]
RUNS = ["mmlu:subject=anatomy,method=multiple_choice_joint,model=groq_llama3-8b-8192",
        "mmlu:subject=anatomy,method=multiple_choice_joint,model=together_Llama-3-70b-chat-hf"]


def suite_zip(path: Path) -> Path:
    """Two runs of the real mmlu-v1 suite (and its schema), zipped as a user would zip the folder."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for run in RUNS:
            for f in sorted((MMLU_SUITE / run).iterdir()):
                z.write(f, f"v1/{run}/{f.name}")
        if (MMLU_SUITE / "schema.json").exists():
            z.write(MMLU_SUITE / "schema.json", "v1/schema.json")
    return path


def errors(page) -> list[str]:
    return page.locator("[data-testid='stAlertContentError'] [data-testid='stMarkdownContainer']").all_inner_texts()


def submit(page) -> None:
    page.locator("[data-testid='stBaseButton-secondaryFormSubmit']").click()
    page.wait_for_timeout(500)
    settled(page)


def test_uploads_in_the_browser(tmp_path):
    missing = [r for r in RUNS if not (MMLU_SUITE / r).is_dir()]
    assert not missing, missing
    db = tmp_path / "store.duckdb"
    import store

    with store.write_session(db):
        pass  # an empty store: the page opens on the load panel
    (tmp_path / "logs").mkdir()
    env = {**os.environ, "FAULTLINE_DB": str(db), "FAULTLINE_DATA_ROOTS": f"{tmp_path / 'logs'}{os.pathsep}{tmp_path / 'uploads'}"}
    env.pop("FAULTLINE_READ_ONLY", None)
    wrong_shape = tmp_path / "scores.json"
    wrong_shape.write_text(json.dumps([{"question": "q1", "answer": "A"}, {"question": "q2", "answer": "B"}]))
    suite = suite_zip(tmp_path / "my-suite.zip")

    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page()
        page.goto(base)
        settled(page)
        path_box = page.locator("input[aria-label='Path on this machine']")

        # a path that is not there: one red box, and the typed path stays in the box
        path_box.fill("nowhere/preds.jsonl")
        submit(page)
        assert errors(page) == ["nowhere/preds.jsonl: no such file or folder under the allowed folders"]
        assert path_box.input_value() == "nowhere/preds.jsonl"
        submit(page)
        assert len(errors(page)) == 1  # a second refusal replaces the first, it does not pile up

        # a valid JSON file of the wrong shape: the job fails and says what the file is
        path_box.fill("")
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(wrong_shape))
        submit(page)
        page.wait_for_selector("[data-testid='stAlertContentError']", timeout=60_000)
        said = errors(page)
        assert len(said) == 1 and "load scores.json — failed (exit 2)" in said[0], said
        assert "scores.json: not a log format Faultline recognises: it is a .json JSON array of 2 objects (the first with keys answer, question)" in said[0]
        assert "not JSON" not in said[0]
        assert page.locator("[data-testid='stException']").count() == 0

        # a HELM suite as a .zip: unpacked into the upload's own folder and loaded
        page.locator("[data-testid='stFileChipDeleteBtn'] button, button[data-testid='stFileChipDeleteBtn']").first.click()
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(suite))
        page.wait_for_selector("[data-testid='stFileChipName']:has-text('my-suite.zip')")
        assert page.locator("[data-testid='stFileChipName']").all_inner_texts() == ["my-suite.zip"]
        submit(page)
        page.wait_for_selector("[data-testid='stMetric']", timeout=90_000)  # the overview, once the data is in
        settled(page)
        metrics = dict(zip(page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                           page.locator("[data-testid='stMetricValue']").all_inner_texts()))
        assert metrics["Runs"] == "2" and metrics["Models"] == "2", metrics
        assert page.locator("[data-testid='stException']").count() == 0
    unpacked = list((tmp_path / "uploads").glob("*/my-suite/v1"))
    assert len(unpacked) == 1 and sorted(p.name for p in unpacked[0].iterdir() if p.is_dir()) == sorted(RUNS)
    assert q(db, "SELECT count(*) FROM runs") == [(2,)]
    shutil.rmtree(tmp_path / "uploads")
