"""Time every dashboard page to a settled page in a real browser (Debian chromium via Playwright on
`streamlit run`), on SYNTHETIC stores of 10,000 and 1,000,000 predictions.

    python bench/browser.py [--predictions 10000 1000000] [--keep DIR] [--reuse]

AppTest (bench/pages.py) times the script alone; a user waits for more: the page's JavaScript,
the websocket carrying every element, and the charts drawn. Here a page is *settled* when the
script is not running, Streamlit's running indicator (its status widget) is gone, the main area
holds elements and every Vega-Lite chart has drawn its canvas or SVG — and stays so for 0.5 s
(the page may run again, e.g. once it has put its choices in the URL); the time is from the
navigation's start to the first moment of that quiet (the 0.5 s is not counted).

Each store is built as bench/pages.py builds it (10 models × 5 datasets × 20 domains, a tenth of
the failures analysed). Every page is opened twice in one browser: the first visit fills the
server's query cache, the second is what a user sees afterwards. The reference, in the same run:
a bare Streamlit page (its own server) that runs one DuckDB query, `count(*)` over `outcomes`.

Where the time goes, per visit: **server** — the script runs Streamlit made for the navigation
(timed inside the server process around `ScriptRunner._run_script`, reruns included, fragment
runs apart); **first message** — from the navigation's start to the websocket's first message
(the page's HTML and JavaScript, the connection); **messages** — how many the websocket received
and their size; **after last** — from the last message to settled: the browser drawing what it
received (Vega's charts, the data grids).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
QUIET_MS = 500
A, B = "synthetic-model-00", "synthetic-model-05"
PAGES = [
    ("/", "/"),
    ("/signatures", "/signatures"),
    ("/compare", f"/compare?a={A}&b={B}"),
    ("/slices", "/slices"),
    ("/instances", "/instances?outcome=failed"),
    ("/instances (detail)", "/instances?instance=synthetic-dataset-0%3Asynthetic-domain-0-00%2Fid7"),
    ("/taxonomy", "/taxonomy?category=Factual+Error"),
    ("/data", "/data"),
]

# runs `streamlit run` with each script run timed: (start, end, page, fragment) as JSON lines
SERVER = """
import json, os, sys, time
from streamlit.runtime.scriptrunner import script_runner
from streamlit.web import cli
log = open(os.environ["FAULTLINE_BENCH_RUNS"], "a", buffering=1)
run = script_runner.ScriptRunner._run_script
def timed(self, rerun_data):
    start = time.time()
    try:
        return run(self, rerun_data)
    finally:
        log.write(json.dumps({"start": start, "end": time.time(), "page": rerun_data.page_script_hash,
                              "fragment": bool(rerun_data.fragment_id_queue)}) + "\\n")
script_runner.ScriptRunner._run_script = timed
sys.argv = ["streamlit", "run", *sys.argv[1:]]
sys.exit(cli.main())
"""

REFERENCE_PAGE = """
import sys
sys.path.insert(0, {root!r})
import streamlit as st
import store
with store.read_connection() as con:
    st.write(con.execute("SELECT count(*) FROM outcomes").fetchall()[0][0])
"""

# true, with the moment it became so, once the page has been settled for QUIET_MS
SETTLED_JS = """(quiet) => {
    const app = document.querySelector("[data-testid='stApp']");
    const charts = [...document.querySelectorAll("[data-testid='stVegaLiteChart']")];
    const ok = app && app.getAttribute('data-test-script-state') === 'notRunning'
        && !document.querySelector("[data-testid='stStatusWidget']")
        && document.querySelector("[data-testid='stMain'] [data-testid='stElementContainer']")
        && charts.every(c => { const d = c.querySelector('canvas, svg');
                               return d && d.getBoundingClientRect().width > 0; });
    const now = performance.now();
    if (!ok) { window.__settledAt = null; return false; }
    if (window.__settledAt == null) window.__settledAt = now;
    return now - window.__settledAt >= quiet
        ? {at: performance.timeOrigin + window.__settledAt, charts: charts.length} : false;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def server(script: Path, cwd: Path, db: Path, runs: Path, log: Path):
    """`streamlit run SCRIPT` (its script runs timed into `runs`); yields its base URL once healthy."""
    port = _free_port()
    env = {**os.environ, "FAULTLINE_DB": str(db), "FAULTLINE_BENCH_RUNS": str(runs),
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("FAULTLINE_READ_ONLY", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(script), "--server.headless=true", f"--server.port={port}",
             "--server.address=127.0.0.1", "--server.fileWatcherType=none"],
            cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"streamlit did not start:\n{log.read_text()}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def visit(page, url: str, runs: Path) -> dict:
    """Open `url` in a fresh document and time it to settled, with where the time went."""
    frames: list[tuple[float, int]] = []

    def on_socket(ws) -> None:
        ws.on("framereceived", lambda payload: frames.append((time.time(), len(payload))))

    page.on("websocket", on_socket)
    done_before = len(runs.read_text().splitlines()) if runs.exists() else 0
    started = time.time()
    try:
        page.goto(url, wait_until="commit")
        settled = page.wait_for_function(SETTLED_JS, arg=QUIET_MS, polling=50, timeout=300_000).json_value()
    finally:
        page.remove_listener("websocket", on_socket)
    start_ms = page.evaluate("performance.timeOrigin") / 1000
    at = settled["at"] / 1000
    script = [json.loads(line) for line in runs.read_text().splitlines()[done_before:]]
    script = [r for r in script if not r["fragment"] and r["start"] <= at]
    first, last = (frames[0][0], max(t for t, _ in frames if t <= at)) if frames else (at, at)
    return {"seconds": at - start_ms, "server": sum(r["end"] - r["start"] for r in script),
            "runs": len(script), "first_message": first - start_ms,
            "messages": sum(1 for t, _ in frames if t <= at), "kb": sum(n for t, n in frames if t <= at) / 1024,
            "largest_kb": max((n for t, n in frames if t <= at), default=0) / 1024,
            "after_last": at - last, "charts": settled["charts"], "wall": time.time() - started}


def _build(db: Path, predictions: int) -> float:
    """The store bench/pages.py builds (its module loaded by path: `pages` is the app's folder)."""
    spec = importlib.util.spec_from_file_location("bench_pages", ROOT / "bench" / "pages.py")
    bench_pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_pages)
    started = time.perf_counter()
    bench_pages.build(db, predictions)
    return time.perf_counter() - started


def _row(name: str, v: dict, ref: float) -> str:
    return (f"{name:22} {v['seconds']:7.2f} s {v['seconds'] / ref:6.1f}× {v['server']:7.2f} s {v['runs']:3d} "
            f"{v['first_message']:7.2f} s {v['messages']:5d} {v['kb']:8.0f} {v['largest_kb']:8.0f} "
            f"{v['after_last']:7.2f} s {v['charts']:3d}")


HEADER = (f"{'page':22} {'settled':>9} {'× ref':>7} {'server':>9} {'run':>3} {'1st msg':>9} {'msgs':>5} "
          f"{'KB':>8} {'max KB':>8} {'after last':>9} {'charts':>3}")


def bench_store(db: Path, tmp: Path, browser) -> None:
    runs = tmp / f"{db.stem}-runs.jsonl"
    ref_dir = tmp / "reference"
    ref_dir.mkdir(exist_ok=True)
    (ref_dir / "reference.py").write_text(REFERENCE_PAGE.format(root=str(ROOT)))
    results: dict[str, list[dict]] = {}
    with server(ref_dir / "reference.py", ref_dir, db, runs, tmp / f"{db.stem}-reference.log") as base:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        results["reference"] = [visit(page, base + "/", runs) for _ in range(2)]
        page.close()
    with server(ROOT / "app.py", ROOT, db, runs, tmp / f"{db.stem}-app.log") as base:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        visit(page, base + "/", runs)  # the server's first page: its imports, Altair's schema validator
        for name, path in PAGES:
            results[name] = [visit(page, base + path, runs) for _ in range(2)]
        page.close()
    for which, label in ((0, "first visit (fills the query cache)"), (1, "second visit (queries cached)")):
        ref = results["reference"][which]["seconds"]
        print(f"\n{db.stem}: {label}\n{HEADER}")
        for name, visits in results.items():
            print(_row(name, visits[which], ref))
    slowest = max((n for n in results if n != "reference"), key=lambda n: results[n][0]["seconds"])
    print(f"\nslowest first visit: {slowest} {results[slowest][0]['seconds']:.2f} s against the reference's "
          f"{results['reference'][0]['seconds']:.2f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predictions", type=int, nargs="+", default=[10_000, 1_000_000],
                    help="sizes of the synthetic stores (default 10,000 and 1,000,000)")
    ap.add_argument("--keep", help="build the stores in this folder and keep them (default: a temp folder)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: time the pages on the stores already there")
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"needs Debian's chromium at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        folder = Path(args.keep) if args.keep else tmp
        folder.mkdir(parents=True, exist_ok=True)
        stores = []
        for n in args.predictions:
            db = folder / f"browser-{n}.duckdb"
            if not (args.reuse and db.exists()):
                db.unlink(missing_ok=True)
                print(f"{db.name}: built in {_build(db, n):.1f} s", file=sys.stderr)
            stores.append(db)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            try:
                for db in stores:
                    bench_store(db, tmp, browser)
            finally:
                browser.close()
    load = os.getloadavg()
    print(f"\nload average at the end (1, 5, 15 min): {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} "
          f"on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
