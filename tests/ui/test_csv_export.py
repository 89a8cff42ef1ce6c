"""Text that leaves as a table is inert (issue 27): model outputs that a spreadsheet would run as
formulas are neutralised in every CSV the app offers, in read-only mode too, and Streamlit's own
unescaped "Download as CSV" is not offered."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import polars as pl
import pytest

from tests.seed_store import seed
from ui.tables import FORMULA_STARTS, csv_text, inert, safe_name

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = ['=HYPERLINK("http://127.0.0.1:9/x","ok")', "=cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0",
            "+1+1", "-2+3+cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "\uff1d1+1"]


def test_every_formula_start_is_neutralised_and_nothing_else_changes():
    assert [inert(f) for f in FORMULAS] == ["'" + f for f in FORMULAS]
    for plain in ("ok", " =1+1", "a=b", "", "5", "'quoted"):
        assert inert(plain) == plain
    assert inert(-2.5) == -2.5 and inert(3) == 3 and inert(None) is None


def test_csv_of_formula_like_outputs_opens_inert():
    frame = pl.DataFrame({"model": ["=evil", "ok"], "output": [FORMULAS[0], "fine"], "score": [-1.0, 0.5],
                          "refs": [["=a", "b"], []]})
    text = csv_text(frame, {"output": "Output", "score": "Score"})
    assert text == ('model,Output,Score,refs\r\n'
                    '\'=evil,"\'=HYPERLINK(""http://127.0.0.1:9/x"",""ok"")",-1.0,"[""=a"", ""b""]"\r\n'
                    'ok,fine,0.5,[]\r\n')
    rows = list(csv.reader(io.StringIO(text)))
    text_cells = [c for row in rows for c in row if not re.fullmatch(r"-?\d+(\.\d+)?", c)]
    assert not [c for c in text_cells if c.startswith(FORMULA_STARTS)]


def test_a_column_name_the_renderer_cannot_take_is_shown_escaped():
    assert safe_name("a\x00b\x1b") == "a\\x00b\\x1b" and safe_name("plain") == "plain"


def test_no_page_draws_a_table_without_the_inert_export():
    """Every table goes through ui.tables.show_table (which also offers the inert CSV)."""
    offenders = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]:
        if path.name == "tables.py":
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\.(dataframe|data_editor|table)\(", line):
                offenders.append(f"{path.relative_to(ROOT)}:{i}")
    assert offenders == []


def test_streamlits_own_export_is_off():
    config = (ROOT / ".streamlit" / "config.toml").read_text()
    assert re.search(r"^disableDataExport = true$", config, re.M)
    assert re.search(r'^showErrorDetails = "type"$', config, re.M)


def _formula_store(db: Path) -> None:
    rows = []
    for i, output in enumerate(FORMULAS):
        rows.append({"model": "=m1", "dataset": "ds", "instance_id": f"q{i}", "is_correct": False, "output": output,
                     "title": "=HYPERLINK(\"http://127.0.0.1:9/t\",\"title\")", "category": "Reasoning Error"})
        rows.append({"model": "m2", "dataset": "ds", "instance_id": f"q{i}", "is_correct": True, "output": "fine"})
    seed(db, rows)


def test_every_table_of_every_page_offers_the_inert_csv(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db = tmp_path / "f.duckdb"
    _formula_store(db)
    monkeypatch.setenv("FAULTLINE_DB", str(db))
    monkeypatch.setenv("FAULTLINE_READ_ONLY", "1")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params.update({"a": "=m1", "b": "m2", "instance": "ds:q0", "category": "Reasoning Error"})
    at.run()
    for page in [None, *sorted(p.name for p in (ROOT / "pages").glob("*.py"))]:
        if page:
            at.switch_page(f"pages/{page}")
            at.run()
        assert not at.exception, page
        buttons = at.get("download_button")
        csvs = [b for b in buttons if b.proto.label == "CSV"]
        assert len(csvs) == len([d for d in at.dataframe if len(d.value)]), page


@pytest.mark.browser
@pytest.mark.skipif(not Path("/usr/bin/chromium").exists() and os.environ.get("CI") != "true",
                    reason="Debian chromium is not installed (apt-get install chromium)")
def test_csv_download_in_chromium_is_inert_and_the_toolbar_offers_none(tmp_path):
    """Read-only, as a shared dashboard runs: the instances table's CSV (our button, a real
    download) holds the outputs neutralised, and the table's own toolbar has no CSV download."""
    from urllib.parse import urlencode

    from browser_kit import chromium, settled, streamlit_app

    db = tmp_path / "f.duckdb"
    _formula_store(db)
    env = {**os.environ, "FAULTLINE_DB": str(db), "FAULTLINE_READ_ONLY": "1"}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(accept_downloads=True)
        page.goto(f"{base}/instances?{urlencode({'models': '=m1', 'outcome': 'failed'})}")
        settled(page)
        grid = page.locator("[data-testid='stDataFrame']").first
        grid.wait_for(timeout=30_000)
        grid.hover()
        page.wait_for_timeout(500)
        toolbar = page.locator("[data-testid='stElementToolbar']").first
        assert toolbar.locator("button[aria-label='Download as CSV'], [aria-label='Download as CSV']").count() == 0
        assert page.get_by_label("Download as CSV").count() == 0
        with page.expect_download(timeout=30_000) as info:
            page.locator("[data-testid='stDownloadButton'] button", has_text="CSV").first.click()
        download = info.value
        assert download.suggested_filename == "faultline-instances.csv"
        text = Path(download.path()).read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0][:3] == ["Dataset", "Question id", "Model"]
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c.startswith(FORMULA_STARTS)]
    outputs = sorted(c for c in cells if c.startswith("'"))
    for f in FORMULAS:
        assert "'" + f.replace("\r", "\n") in outputs or "'" + f in outputs, f


def test_a_table_the_renderer_cannot_take_is_said_and_the_page_goes_on(tmp_path):
    """A native panic (a BaseException) in the renderer no longer ends the script thread."""
    from streamlit.testing.v1 import AppTest

    script = tmp_path / "page.py"
    script.write_text(
        "import streamlit as st\n"
        "from ui.tables import show_table\n"
        "class Panic(BaseException):\n"
        "    pass\n"
        "import polars as pl\n"
        "orig = st.dataframe\n"
        "def boom(*a, **k):\n"
        "    raise Panic('renderer panicked')\n"
        "st.dataframe = boom\n"
        "show_table(pl.DataFrame({'a': [1]}), name='t')\n"
        "st.dataframe = orig\n"
        "st.text('after the table')\n")
    at = AppTest.from_file(str(script), default_timeout=30)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["This table could not be drawn (Panic); the rest of the page is shown."]
    assert [t.value for t in at.text] == ["after the table"]
