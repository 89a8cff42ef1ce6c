"""A real browser (Debian chromium via Playwright) on `streamlit run`: a fresh clone's first start
shows the demo's charts, hostile text stays text, and /compare?a=…&b=… reproduces the view."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from browser_kit import CHROMIUM, chromium, settled, streamlit_app
from conftest import ROOT
from judged_question import JUDGE_WORDS, evidence_rows

from tests.seed_store import label_failures, seed

A, B = "groq/llama3-8b-8192", "together/Llama-3-70b-chat-hf"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists() and os.environ.get("CI") != "true",
                       reason="Debian chromium is not installed (apt-get install chromium)"),
]


@pytest.fixture
def server(mmlu_db, tmp_path):
    label_failures(mmlu_db, ["Reasoning Error", "Factual Error", "Hard to Analyze"])
    with streamlit_app(ROOT, {**os.environ, "FAULTLINE_DB": str(mmlu_db)}, tmp_path / "streamlit.log") as base:
        yield base


def test_fresh_clone_first_start_shows_demo_charts(tmp_path):
    """The README's first command in a clone: no database, no API key, no ../shared."""
    clone = tmp_path / "faultline"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    assert not (clone / "data" / "faultline.duckdb").exists() and not (clone / "data" / "demo.duckdb").exists()
    env = {k: v for k, v in os.environ.items()
           if not k.endswith("_API_KEY") and not k.startswith("FAULTLINE_")}
    started = time.monotonic()
    with streamlit_app(clone, env, tmp_path / "streamlit.log", timeout=90) as base, chromium() as browser:
        page = browser.new_page()
        for path, n_charts in (("/", 4), ("/signatures", 2)):
            remaining = 90_000 - (time.monotonic() - started) * 1000
            page.goto(base + path)
            settled(page, timeout=max(remaining, 1000))
            page.wait_for_selector("[data-testid='stVegaLiteChart'] canvas, [data-testid='stVegaLiteChart'] svg",
                                   timeout=max(90_000 - (time.monotonic() - started) * 1000, 1000))
            assert page.locator("[data-testid='stException']").count() == 0
            assert page.locator("[data-testid='stVegaLiteChart']").count() == n_charts
            assert "DEMO DATA" in page.inner_text("[data-testid='stMain']")
    assert time.monotonic() - started < 90
    assert (clone / "data" / "demo.duckdb").exists() and not (clone / "data" / "faultline.duckdb").exists()


HOSTILE = ("ok\n\n# injected heading\n<img src=http://127.0.0.1:9/x> [link](http://example.invalid) "
           "![pic](http://127.0.0.1:9/y)")


def test_injected_text_renders_as_text(tmp_path):
    db = tmp_path / "hostile.duckdb"
    evil = "evil [m](http://example.invalid) <img src=http://127.0.0.1:9/m>"
    rows = []
    for i in range(4):
        rows.append(dict(model=evil, dataset="ds", domain="d", instance_id=f"q{i}", is_correct=i == 3,
                         input=HOSTILE, output=HOSTILE, title="title " + HOSTILE, category="Refusal",
                         criteria=[{"criterion": HOSTILE, "present_in_wrong": True, "quality": "incorrect",
                                    "evidence": "# injected heading", "comment": HOSTILE}]))
        rows.append(dict(model="plain", dataset="ds", domain="d", instance_id=f"q{i}", is_correct=i != 3,
                         input=HOSTILE, output="fine " + HOSTILE, title="t " + HOSTILE, category="Refusal"))
    seed(db, rows)
    from urllib.parse import urlencode

    requested = []
    env = {**os.environ, "FAULTLINE_DB": str(db)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page()
        page.on("request", lambda r: requested.append(r.url))
        for url in (f"{base}/instances?{urlencode({'instance': 'ds:q0'})}",
                    f"{base}/compare?{urlencode({'a': 'plain', 'b': evil})}",
                    f"{base}/instances?{urlencode({'instance': 'ds:<img src=http://127.0.0.1:9/z>'})}"):
            page.goto(url)
            settled(page)
            page.wait_for_timeout(1500)
            assert page.locator("[data-testid='stException']").count() == 0
            main = page.locator("[data-testid='stMain']")
            assert main.locator("h1").all_inner_texts() in (["Instances"], ["Compare two models"])
            assert main.locator("img").count() == 0
            assert main.locator("a[href*='example.invalid'], a[href*='127.0.0.1:9']").count() == 0
        # the hostile link parameter is shown, as text (a zero-width space defuses its URL)
        body = page.inner_text("[data-testid='stMain']").replace("\u200b", "")
        assert "No outcome for question “ds:<img src=http://127.0.0.1:9/z>”" in body
    from urllib.parse import urlparse

    assert not [u for u in requested if urlparse(u).netloc in ("127.0.0.1:9", "example.invalid")]


def test_compare_page_in_chromium(server):
    from urllib.parse import urlencode

    with chromium() as browser:
        page = browser.new_page()
        page.goto(f"{server}/compare?{urlencode({'a': A, 'b': B, 'domains': 'anatomy'})}")
        settled(page)
        page.wait_for_selector("[data-testid='stVegaLiteChart']", timeout=30_000)
        assert page.locator("[data-testid='stException']").count() == 0
        body = page.inner_text("[data-testid='stMain']")
        assert "Only A fails" in body and "Only B fails" in body
        assert [page.get_by_role("combobox", name=n).input_value() for n in ("Model A", "Model B")] == [A, B]
        assert "On 19 questions both answered" in body  # the domain filter came from the URL
        assert "no significant difference (McNemar exact p" in body
        assert page.locator("[data-testid='stVegaLiteChart']").count() >= 1
        link = page.inner_text("[data-testid='stSidebar'] [data-testid='stCode']")
        assert link.startswith(f"{server}/compare?a=")
        # the page menu keeps the shared filters when switching pages
        page.locator("[data-testid='stSidebar'] a", has_text="Slices").click()
        page.wait_for_url("**/slices?domains=anatomy", timeout=30_000)
        settled(page)
        assert page.locator("[data-testid='stException']").count() == 0

        # clicking a heatmap cell on /signatures offers the link to those failures
        page.goto(f"{server}/signatures")
        settled(page)
        chart = page.locator("[data-testid='stVegaLiteChart']").first
        chart.wait_for(timeout=30_000)
        # a cell of the heatmap (Vega draws each as a path in the rect mark's group)
        cell = chart.locator("g.mark-rect path").first
        cell.wait_for(timeout=30_000)
        box = cell.bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        link = page.locator("[data-testid='stPageLink'] a", has_text="failures →")
        link.wait_for(timeout=30_000)
        assert "instances?models=" in link.get_attribute("href")
        assert "outcome=failed" in link.get_attribute("href")


# ---- issue 17: pages a researcher trusts (fixture store: mmlu-v1 + safety-v4, analysed offline)

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
PAGES = ["/", "/signatures", "/compare", "/slices", "/instances", "/taxonomy", "/data"]


@pytest.fixture
def fixture_store(mmlu_db):
    """mmlu-v1 and safety-v4 in one store, analysed by the offline analyst: two benchmarks whose
    models share no question across them, so the first two models by name share none."""
    from ingest import ingest_paths
    from tests.conftest import SAFETY, run_module

    ingest_paths([SAFETY], db=mmlu_db)
    proc = run_module("taxonomy", "analyze", "--db", mmlu_db, "--analyst", "offline")
    assert proc.returncode == 0, proc.stderr
    return mmlu_db


def _recording(page) -> list[str]:
    """Every request the page makes; one for another host is recorded and refused."""
    from urllib.parse import urlparse

    seen = []

    def handle(route):
        url = route.request.url
        seen.append(url)
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname in LOCAL_HOSTS:
            route.continue_()
        else:
            route.abort()

    page.route("**/*", handle)
    return seen


def test_no_request_leaves_the_host_on_any_page(fixture_store, tmp_path):
    from urllib.parse import urlparse

    env = {**os.environ, "FAULTLINE_DB": str(fixture_store)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        seen = _recording(page)
        for path in PAGES + ["/instances?instance=mmlu%3Aanatomy%2Fid138"]:
            page.goto(base + path)
            settled(page)
            page.wait_for_timeout(1500)  # icons and fonts load after the script settles
            assert page.locator("[data-testid='stException']").count() == 0, path
        offhost = sorted({u for u in seen if not u.startswith(("data:", "blob:"))
                          and urlparse(u).hostname not in LOCAL_HOSTS})
        assert offhost == []
        # the favicon is ours, served by the app itself
        icon = page.locator("link[rel='shortcut icon']").get_attribute("href")
        assert icon.startswith(("/", base)) or urlparse(icon).hostname in LOCAL_HOSTS, icon
        assert len(seen) > 50  # the recording saw the pages' own requests


def test_compare_opens_on_a_pair_that_shares_questions_and_its_chart_downloads_as_svg(fixture_store, tmp_path):
    import re

    import stats
    import store
    from store import queries as q

    with store.read_connection(fixture_store) as con:
        shared = q.shared_questions(con)
        best = shared.row(0, named=True)
        first_two = sorted(q.filter_options(con)["models"])[:2]
        assert not shared.filter((shared["a"] == first_two[0]) & (shared["b"] == first_two[1])).height
        c = stats.compare(con, best["a"], best["b"])
    env = {**os.environ, "FAULTLINE_DB": str(fixture_store)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(base + "/compare")
        settled(page)
        # the page may run again once it has put the chosen pair in the URL: wait for its figures
        page.locator("[data-testid='stMetricLabel']", has_text="Questions both answered").first.wait_for(timeout=60_000)
        settled(page)
        body = page.inner_text("[data-testid='stMain']")
        metrics = dict(zip(page.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                           page.locator("[data-testid='stMetricValue']").all_inner_texts()))
        assert metrics["Questions both answered"] == f"{best['shared']:,}", metrics
        assert "No failures analysed yet" not in body
        # the pair picked, as the two pickers show it (their values are inputs, not text)
        picked = [page.get_by_role("combobox", name=name).input_value() for name in ("Model A", "Model B")]
        assert sorted(picked) == sorted([best["a"], best["b"]]), picked
        # one McNemar test over several datasets only where each is pass/fail (safety's scores are not)
        pooled = len(c.by_dataset) > 1 and all(d.scores is None for d in c.by_dataset)
        assert ("Overall: paired McNemar exact test" in body) == pooled
        # the Δ chart, downloaded as SVG: one mark per error type, coloured by the table's finding
        page.locator("[data-testid='stVegaLiteChart']").first.wait_for(timeout=30_000)
        with page.expect_download(timeout=60_000) as dl:
            page.locator("[data-testid='stDownloadButton'] button", has_text="SVG").first.click()
        svg = Path(dl.value.path()).read_text()
        assert dl.value.suggested_filename.endswith(".svg") and svg.lstrip().startswith("<svg")
        labels = re.findall(r'aria-label="([^"]*finding[^"]*)"', svg)
        marks = {}
        for label in labels:
            fields = dict(part.split(": ", 1) for part in label.split("; ") if ": " in part)
            if "category" in fields and "delta" in fields:
                marks[fields["category"]] = fields["finding"]
        assert marks == {r.category: r.finding for r in c.categories}
        assert all((r.q_bh <= 0.05) == r.finding.startswith("larger in") for r in c.categories)


def test_instance_view_shows_score_rule_judge_words_and_the_chosen_option(tmp_path):
    db = tmp_path / "evidence.duckdb"
    seed(db, evidence_rows())
    env = {**os.environ, "FAULTLINE_DB": str(db)}
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(base + "/instances")
        settled(page)
        # it opens on the failures, saying how many there are
        assert "1 failed outcome" in page.inner_text("[data-testid='stMain']")
        page.goto(base + "/instances?instance=geo%3Aq1")
        settled(page)
        page.get_by_text("Task instructions").first.click()
        page.wait_for_timeout(500)
        body = page.inner_text("[data-testid='stMain']")
        # a 0/1 metric's rule reads "pass = correct", not a threshold
        assert "exact_match = 0 · pass = correct (exact_match is 0/1, from the registry)" in body
        assert "exact_match = 1 · pass = correct" in body
        assert "failed" in body and "passed" in body
        assert "chose B · Lyon" in body and "gold A · Paris" in body
        assert JUDGE_WORDS in body and "gpt-4o · accuracy · score 1" in body
        assert "Answer with the letter of the correct option." in body


def test_store_at_a_url_in_chromium(tmp_path):
    """The hosted recipe: FAULTLINE_DB names a store on an HTTP server; the page reads its copy,
    says where the data comes from, and offers no loading or analysis."""
    from tests.store_server import StoreServer

    db = tmp_path / "published.duckdb"
    seed(db, [dict(model="m1", dataset="ds", instance_id=f"q{i}", is_correct=i % 3 == 0) for i in range(9)])
    with StoreServer({"/pub/published.duckdb": db.read_bytes()}) as store_srv:
        url = store_srv.url("/pub/published.duckdb")
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("FAULTLINE_")},
               "FAULTLINE_DB": url, "FAULTLINE_CACHE_DIR": str(tmp_path / "cache")}
        with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
            page = browser.new_page()
            page.goto(base + "/")
            settled(page)
            page.wait_for_selector("[data-testid='stMetricValue']")
            # md() breaks autolinks with a zero-width space after the scheme
            main = page.inner_text("[data-testid='stMain']").replace("\u200b", "")
            page.screenshot(path=str(tmp_path / "remote.png"), full_page=True)
            assert page.locator("[data-testid='stException']").count() == 0
            assert f"Read-only: data from {url} (read-only copy fetched" in main
            values = page.locator("[data-testid='stMetricValue']").all_inner_texts()
            assert values[0] == "1" and values[4] == "9" and values[5] == "6"  # runs, predictions, failures
            assert "Load benchmark logs" not in main and "Analyse" not in main
        assert store_srv.statuses()[0] == 200


def _recipe_block(name: str, text: str) -> str:
    """The fenced block after `<!-- recipe: NAME -->` in docs/hosting.md."""
    after = text.split(f"<!-- recipe: {name} -->", 1)[1]
    return after.split("```", 2)[1].split("\n", 1)[1]


def test_hosting_recipe_in_chromium(tmp_path):
    """docs/hosting.md's recipe as written: its publishing snippet uploads a store to a (local) S3
    endpoint, its secrets TOML (bucket, key, endpoint filled in) configures `streamlit run`, and
    the page shows the store's figures, read-only, naming the s3:// URL."""
    import tomllib

    import boto3

    from tests.s3_server import SETUP_KEYS, reader_key, s3_endpoint

    recipe = (ROOT / "docs" / "hosting.md").read_text()
    publish, secrets = _recipe_block("publish", recipe), _recipe_block("secrets", recipe)
    (tmp_path / "data").mkdir()
    seed(tmp_path / "data" / "published.duckdb",
         [dict(model="m1", dataset="ds", instance_id=f"q{i}", is_correct=i % 4 == 0) for i in range(8)])
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FAULTLINE_"))}
    # create_bucket + the recipe's upload + the reader's key: every later call is signed and checked
    with s3_endpoint(tmp_path, unauthenticated=5) as endpoint:
        boto3.client("s3", endpoint_url=endpoint, **SETUP_KEYS).create_bucket(Bucket="my-bucket")
        subprocess.run([sys.executable, "-c", publish], cwd=tmp_path, check=True, timeout=120, env={
            **clean, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "setup", "AWS_SECRET_ACCESS_KEY": "setup",
            "AWS_DEFAULT_REGION": "us-east-1"})
        access, secret = reader_key(endpoint)
        values = tomllib.loads(secrets)
        values.update(AWS_ACCESS_KEY_ID=access, AWS_SECRET_ACCESS_KEY=secret, AWS_REGION="us-east-1",
                      AWS_ENDPOINT_URL_S3=endpoint)
        toml = "\n".join(f"{k} = {json.dumps(v)}" for k, v in values.items())
        (tmp_path / "secrets.toml").write_text(toml + "\n")
        env = {**clean, "FAULTLINE_CACHE_DIR": str(tmp_path / "cache")}
        with streamlit_app(ROOT, env, tmp_path / "streamlit.log", args=(f"--secrets.files={tmp_path / 'secrets.toml'}",)) as base, \
                chromium() as browser:
            page = browser.new_page()
            page.goto(base + "/")
            settled(page)
            page.wait_for_selector("[data-testid='stMetricValue']")
            main = page.inner_text("[data-testid='stMain']").replace("\u200b", "")
            assert page.locator("[data-testid='stException']").count() == 0
            assert f"Read-only: data from {values['FAULTLINE_DB']} (read-only copy fetched" in main
            values_shown = page.locator("[data-testid='stMetricValue']").all_inner_texts()
            assert values_shown[4] == "8" and values_shown[5] == "6"  # predictions, failures
    assert values["FAULTLINE_DB"] == "s3://my-bucket/faultline/published.duckdb" and values["read_only"] is True


# ---- issue 23 item 10: pages that fit at 1280 and 1440 px

FIT_JS = (Path(__file__).resolve().parents[1] / "data" / "chart_fit.js").read_text()
FIT_MODELS = [f"provider-{i}/a-rather-long-model-name-{i}b-instruct-v0.{i}" for i in range(5)]


LONG_DATASET = "a-benchmark-with-a-long-name"
# the width of a text in the data grid's font (14 px, the app's sans-serif), measured by the browser
TEXT_WIDTH_JS = """(text) => {
    const grid = document.querySelector("[data-testid='stDataFrame']");
    const ctx = document.createElement("canvas").getContext("2d");
    ctx.font = "14px " + getComputedStyle(grid).fontFamily;
    return ctx.measureText(text).width;
}"""


@pytest.fixture(scope="module")
def crowded_store(tmp_path_factory):
    """Five long-named models failing across all 18 ErrorAtlas error types on shared questions:
    the heatmap's narrowest cells, the small multiples' widest labels, the compare chart's
    longest axis title, and error titles in the instances list."""
    from ui.charts import _ERRORATLAS

    db = tmp_path_factory.mktemp("fit") / "crowded.duckdb"
    rows = []
    for m, model in enumerate(FIT_MODELS):
        for q in range(60):
            fails = (q + m) % 3 != 0
            rows.append(dict(model=model, dataset=LONG_DATASET, domain=f"domain {q % 4}",
                             instance_id=f"q{q:03d}", is_correct=not fails,
                             **({"title": f"Model {m} misreads question {q} entirely",
                                 "category": _ERRORATLAS[(q * (m + 1)) % 18]} if fails else {})))
    seed(db, rows)
    return db


@pytest.mark.parametrize("width", [1280, 1440])
def test_pages_fit_the_window(crowded_store, tmp_path, width):
    """At 1280 and 1440 px every chart's text lies inside the chart's box and no two texts overlap
    (each measured as the quadrilateral it covers on screen, so rotated labels count as drawn),
    no label is cut with an ellipsis, and the instances list's key columns are within the window."""
    from urllib.parse import urlencode

    import polars as pl

    from ui.columns import INSTANCE_KEY_COLUMNS, INSTANCE_WIDTHS, instance_widths

    pages = ["/", "/signatures", "/signatures?measure=count", "/signatures?measure=per_100",
             f"/compare?{urlencode({'a': FIT_MODELS[0], 'b': FIT_MODELS[4]})}", "/slices", "/instances"]
    env = {**os.environ, "FAULTLINE_DB": str(crowded_store)}
    problems = []
    with streamlit_app(ROOT, env, tmp_path / "streamlit.log") as base, chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": 1000})
        for path in pages:
            page.goto(base + path)
            settled(page)
            if path != "/instances":
                page.wait_for_selector("[data-testid='stVegaLiteChart'] svg text", state="attached", timeout=30_000)
                page.wait_for_timeout(1000)  # the charts finish their layout after the script
            assert page.locator("[data-testid='stException']").count() == 0, path
            # no metric's name is cut with an ellipsis (the Overview's counts carry the glossary's names)
            cut = page.evaluate("""() => [...document.querySelectorAll("[data-testid='stMetricLabel'] *")]
                .filter(e => getComputedStyle(e).textOverflow === "ellipsis" && e.scrollWidth > e.clientWidth)
                .map(e => e.textContent)""")
            if cut:
                problems.append((path, "metric label", "truncated", cut))
            fit = page.evaluate(FIT_JS)
            for chart in fit["charts"]:
                assert chart["n"] > 0
                for kind in ("outside", "overlaps", "truncated"):
                    if chart[kind]:
                        problems.append((path, chart["index"], kind, chart[kind][:4]))
        assert not problems, problems
        page.goto(base + "/instances")
        settled(page)
        grid = page.locator("[data-testid='stDataFrame'] .dvn-scroller").first
        grid.wait_for(timeout=30_000)
        # the grid's content is as wide as its columns: the widths asked for were honoured, and
        # the key columns (first) end inside both the grid and the window
        stack = page.locator("[data-testid='stDataFrame'] .dvn-stack").first.bounding_box()
        marker = stack["width"] - sum(INSTANCE_WIDTHS.values())
        assert 0 < marker <= 60
        box = grid.bounding_box()
        key_right = box["x"] + marker + sum(INSTANCE_WIDTHS[c] for c in INSTANCE_KEY_COLUMNS)
        assert key_right <= min(box["x"] + box["width"], width), (key_right, box, width)
        assert list(INSTANCE_WIDTHS)[:len(INSTANCE_KEY_COLUMNS)] == list(INSTANCE_KEY_COLUMNS)
        # the long dataset name is drawn whole: its column (widened from the error title's room,
        # so the total above holds) is wider than the name in the grid's own font
        widths = instance_widths(pl.DataFrame({"dataset": LONG_DATASET, "instance_id": "q000", "model": FIT_MODELS}))
        name_px = page.evaluate(TEXT_WIDTH_JS, LONG_DATASET)
        assert widths["dataset"] >= name_px + 16 > INSTANCE_WIDTHS["dataset"], (widths, name_px)
