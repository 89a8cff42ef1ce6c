"""Issue 34, the first hour in the app, in a real browser (Debian chromium via Playwright on
`streamlit run`) at 1280 px: /compare leads with each dataset's own number and the paired test
that fits its metric, its tables on screen; no page shows a backslash before `_`, in its text or
in an accessibility label; an Excel sheet whose columns have other names and a CSV whose id
column is `id` both finish through the upload panel."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
from browser_kit import CHROMIUM, chromium, settled, streamlit_app
from conftest import ROOT, q

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                       reason="Debian chromium is not installed (apt-get install chromium)"),
]
WIDTH = 1280
PAGES = ["/", "/signatures", "/compare", "/slices", "/instances", "/taxonomy", "/data"]
# a pass/fail dataset beside the jury suite's two 1–5 datasets, with the long name the issue saw cut
BINARY = "mtsamples_replica"


@pytest.fixture(scope="module")
def mixed_store(tmp_path_factory):
    """The MedHELM-shaped suite (aci_bench, med_dialog: 1–5 jury means) and a pass/fail table of
    the same two models, analysed offline: one comparison over both kinds of metric."""
    from ingest import ingest_paths
    from tests.conftest import run_module
    from tests.headline_suites import A, B, jury_suite

    root = tmp_path_factory.mktemp("first-hour")
    table = root / "binary.csv"
    with table.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=["model", "dataset", "instance_id", "input", "output", "correct"])
        writer.writeheader()
        for model, every in ((A, 4), (B, 2)):
            writer.writerows({"model": model, "dataset": BINARY, "instance_id": f"q{i}", "input": f"note {i}",
                              "output": f"summary {i}", "correct": i % every != 0} for i in range(40))
    db = root / "mixed.duckdb"
    ingest_paths([jury_suite(root), table], db=db)
    proc = run_module("taxonomy", "analyze", "--db", db, "--analyst", "offline")
    assert proc.returncode == 0, proc.stderr
    return db


# every element's accessible name and title, and the page's visible text: where a backslash
# stands before an underscore
ESCAPED_JS = r"""() => {
    const found = [];
    for (const el of document.querySelectorAll('*')) {
        for (const name of ['aria-label', 'title', 'aria-description', 'placeholder', 'alt']) {
            const v = el.getAttribute(name);
            if (v && v.includes('\\_')) found.push(name + ': ' + v);
        }
    }
    for (const line of document.body.innerText.split('\n')) if (line.includes('\\_')) found.push('text: ' + line);
    return found;
}"""

# each data grid's column headers (its accessible table), the width of its columns together and
# the part of it on screen
GRIDS_JS = """(n) => [...document.querySelectorAll("[data-testid='stDataFrame']")].slice(0, n).map(g => {
    const box = g.getBoundingClientRect(), scroller = g.querySelector('.dvn-scroller');
    return {headers: [...g.querySelectorAll("th")].map(t => t.textContent), right: box.right,
            content: g.querySelector('.dvn-stack').getBoundingClientRect().width,
            visible: scroller.clientWidth};
})"""


def test_compare_leads_with_each_datasets_number_and_its_test_at_1280(mixed_store, tmp_path):
    import stats
    import store
    from stats import fmt
    from tests.headline_suites import A, B

    with store.read_connection(mixed_store) as con:
        c = stats.compare(con, A, B)
    by = {d.dataset: d for d in c.by_dataset}
    assert sorted(by) == ["aci_bench", "med_dialog", BINARY]
    env = {**os.environ, "FAULTLINE_DB": str(mixed_store)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        page.goto(f"{base}/compare?{urlencode({'a': A, 'b': B})}")
        settled(page)
        # the grids draw after the script: wait for the three tables' headers
        page.wait_for_function("""() => { const g = document.querySelectorAll("[data-testid='stDataFrame']");
            return g.length >= 3 && [0, 1, 2].every(i => g[i].querySelector('th') && g[i].querySelector('.dvn-stack')); }""",
                               timeout=60_000)
        assert page.locator("[data-testid='stException']").count() == 0
        heads = page.locator("[data-testid='stHeading']").all_inner_texts()
        # what was measured first, each kind of metric with its own test; no pooled McNemar over both
        assert heads[:4] == ["Compare two models", "Per dataset, pass/fail: McNemar exact test",
                             "Per dataset, scores: Wilcoxon signed-rank test and paired bootstrap",
                             "Scored datasets: failures under the analysis threshold"], heads
        assert not any(h.startswith("Overall") for h in heads)
        main = page.inner_text("[data-testid='stMain']")
        # every "fails" says its rule
        assert (f"“Fails” means — aci_bench, med_dialog: score < 3.8 of 1–5 — ErrorMap's 0.7 of the range; "
                f"{BINARY}: the log's own verdicts.") in main
        pass_fail, scores, thresholded = page.evaluate(GRIDS_JS, 3)
        assert pass_fail["headers"] == ["Dataset", "Both answered", "A's number", "B's number", "Only A fails",
                                        "Only B fails", "McNemar p", "q (BH)", "Detectable"]
        assert scores["headers"] == ["Dataset", "Both scored", "A's number", "B's number", "B − A (95% bootstrap)",
                                     "Wilcoxon p", "q (BH)", "Detectable"]
        assert thresholded["headers"] == ["Dataset", "Fails when", "Only A fails", "Only B fails", "McNemar p",
                                          "q (BH)", "Detectable"]
        # every column of the three tables on screen: none scrolled out of its grid, no grid past the window
        for grid in (pass_fail, scores, thresholded):
            assert grid["content"] <= grid["visible"] and grid["right"] <= WIDTH, grid
        # the cells are the CLI's numbers (the grid's accessible table holds them as text)
        cells = page.locator("[data-testid='stDataFrame']").nth(1).locator("td").all_inner_texts()
        aci = by["aci_bench"].scores
        assert "4.48 of 1–5" in cells
        assert f"{fmt.p_value(aci.wilcoxon_p)} (n = {aci.wilcoxon_n})" in cells
        cells = page.locator("[data-testid='stDataFrame']").first.locator("td").all_inner_texts()
        assert cells[:2] == [BINARY, str(by[BINARY].n_pairs)] and fmt.p_value(by[BINARY].p) in cells


def test_no_page_shows_a_backslash_before_an_underscore(mixed_store, tmp_path):
    """Dataset and metric names (aci_bench_accuracy) in widget labels, help buttons, headings and
    text: as written, in what is drawn and in what a screen reader reads."""
    from tests.headline_suites import A, B

    env = {**os.environ, "FAULTLINE_DB": str(mixed_store)}
    found = {}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        for path in PAGES + [f"/compare?{urlencode({'a': A, 'b': B})}", "/instances?instance=aci_bench%3Aid0"]:
            page.goto(base + path)
            settled(page)
            page.wait_for_timeout(1000)  # what draws after the script (charts, the sidebar's fields)
            assert page.locator("[data-testid='stException']").count() == 0, path
            # the threshold fields name datasets and metrics: aci_bench: fail below (aci_bench_accuracy, 1–5)
            labels = page.locator("[data-testid='stSidebar'] input[type='number']").evaluate_all(
                "els => els.map(e => e.getAttribute('aria-label'))")
            assert "aci_bench: fail below (aci_bench_accuracy, 1–5)" in labels, (path, labels)
            escaped = page.evaluate(ESCAPED_JS)
            if escaped:
                found[path] = escaped
    assert found == {}


def _select(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label` (type it, then choose it)."""
    box = page.locator("[data-testid='stSelectbox']").filter(has_text=label)
    box.locator("input").click()
    page.keyboard.type(option)
    page.get_by_role("option", name=option, exact=True).click()


def test_an_xlsx_and_a_csv_with_an_id_column_finish_through_the_upload_panel(tmp_path):
    import openpyxl

    import store

    db = tmp_path / "store.duckdb"
    with store.write_session(db):
        pass  # an empty store: the page opens on the load panel
    (tmp_path / "logs").mkdir()
    preds = tmp_path / "preds.csv"
    with preds.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "model", "output", "correct"])
        writer.writerows([f"q{i}", "csv/model", f"answer {i}", i % 3 != 0] for i in range(9))
    sheet = tmp_path / "ratings.xlsx"
    book = openpyxl.Workbook()
    book.active.append(["item", "system", "completion", "rating"])
    for i, rating in enumerate([1, 2, 3, 4, 5, 5, 4, 2]):
        book.active.append([i + 1, "sheet/model", f"note {i}", rating])
    book.save(sheet)
    env = {**os.environ, "FAULTLINE_DB": str(db),
           "FAULTLINE_DATA_ROOTS": f"{tmp_path / 'logs'}{os.pathsep}{tmp_path / 'uploads'}"}
    env.pop("FAULTLINE_READ_ONLY", None)
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": WIDTH, "height": 1300})
        page.goto(base)
        settled(page)
        # the CSV: its `id` column is the instance id, and the summary says which column it took
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(preds))
        page.locator("[data-testid='stBaseButton-secondaryFormSubmit']").first.click()
        done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="load preds.csv — done")
        done.wait_for(state="attached", timeout=90_000)
        assert "preds.csv: instance id from column `id`" in done.text_content()
        assert q(db, "SELECT model, count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes GROUP BY 1") == [
            ("csv/model", 9, 3)]
        # the sheet: refused for the fields it has no column for, then its columns picked in the panel
        # with data in, the panel is on /data, folded
        page.goto(base + "/data")
        settled(page)
        page.get_by_text("Load logs and analyse failures").first.click()
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(sheet))
        page.locator("[data-testid='stBaseButton-secondaryFormSubmit']").first.click()
        page.get_by_role("button", name="Load again with these columns").wait_for(timeout=90_000)
        settled(page)
        error = page.locator("[data-testid='stAlertContentError']").inner_text()
        assert "load ratings.xlsx — failed (exit 2)" in error and "map one with --map FIELD=COLUMN" in error
        # the fields sit inside the window
        for label in ("Question id (instance_id)", "Model output (output)", "Score (a number) (score)"):
            where = page.locator("[data-testid='stSelectbox']").filter(has_text=label).bounding_box()
            assert where and where["x"] + where["width"] <= WIDTH, label
        _select(page, "Question id (instance_id)", "item")
        _select(page, "Model output (output)", "completion")
        _select(page, "Model (model)", "system")
        _select(page, "Score (a number) (score)", "rating")
        page.locator("input[aria-label='Lowest score possible (--scale)']").fill("1")
        page.locator("input[aria-label='Highest score possible']").fill("5")
        page.get_by_role("button", name="Load again with these columns").click()
        page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="ratings.xlsx with").wait_for(
            state="attached", timeout=90_000)
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0
    # 0.7 of the way up 1–5 is 3.8: the ratings 1, 2, 3, 2 fail
    assert q(db, "SELECT model, dataset, metric_min, metric_max, pass_threshold FROM runs ORDER BY 1") == [
        ("csv/model", "preds", None, None, None), ("sheet/model", "ratings", 1.0, 5.0, 3.8)]
    assert q(db, "SELECT count(*), count(*) FILTER (WHERE NOT is_correct) FROM outcomes WHERE model = 'sheet/model'") == [
        (8, 4)]
