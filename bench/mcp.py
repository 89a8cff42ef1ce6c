"""Time every answer of the MCP server (`python -m stats mcp`) on a large SYNTHETIC store.

    python bench/mcp.py [--predictions N] [--keep PATH [--reuse]]

Builds the store bench/pages.py builds (N synthetic predictions, default 1,000,000; a tenth of
them analysed failures), then answers each tool's default call, and a page deep into the long
lists, three times each through mcp_server.answers.answer (what a tool call runs: open the store
read-only, query, fit the answer under its token bound), printing the fastest and slowest. The
reference row, in the same run: a raw DuckDB `SELECT count(*) FROM outcomes`. Exits 1 when an
answer takes 2 s or more.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from mcp_server.answers import Settings, answer  # noqa: E402


def build(db: Path, predictions: int) -> None:
    spec = importlib.util.spec_from_file_location("bench_pages", ROOT / "bench" / "pages.py")
    pages = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pages)
    pages.build(db, predictions)


def timed(fn, repeat: int = 3) -> tuple[float, float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), max(times), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predictions", type=int, default=1_000_000, help="size of the synthetic store (default 1,000,000)")
    ap.add_argument("--keep", help="write the synthetic store here instead of a temp file")
    ap.add_argument("--reuse", action="store_true", help="with --keep: time the answers on the store already there")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.keep) if args.keep else Path(tmp) / "bench.duckdb"
        if not (args.reuse and db.exists()):
            db.unlink(missing_ok=True)
            build(db, args.predictions)
        with duckdb.connect(str(db), read_only=True) as con:
            a, b = [r[0] for r in con.execute("SELECT DISTINCT model FROM latest_outcomes ORDER BY 1 LIMIT 2").fetchall()]
            dataset, instance = con.execute("SELECT dataset, instance_id FROM latest_outcomes LIMIT 1").fetchone()
            n = con.execute("SELECT count(*) FROM predictions").fetchone()[0]

        def reference():
            with duckdb.connect(str(db), read_only=True) as con:
                return con.execute("SELECT count(*) FROM outcomes").fetchone()[0]

        lo, hi, _ = timed(reference)
        print(f"store: {n:,} predictions ({db})")
        print(f"{'reference: count(*) over outcomes':64s} {lo:5.2f}–{hi:5.2f} s")
        settings = Settings(db=str(db))
        calls = [("loaded", {}), ("results", {}), ("compare", {"a": a, "b": b}),
                 ("compare", {"a": a, "b": b, "cursor": "20000"}), ("failures", {}),
                 ("failures", {"category": "Calculation Error", "cursor": "4000"}),
                 ("question", {"dataset": dataset, "instance_id": instance}), ("suspects", {})]
        slow = False
        for tool, kwargs in calls:
            lo, hi, (text, is_error) = timed(lambda: answer(tool, settings, **kwargs))
            data = json.loads(text)
            label = f"{tool} {json.dumps({k: v for k, v in kwargs.items() if k in ('category', 'cursor')})}"
            print(f"{label:64s} {lo:5.2f}–{hi:5.2f} s  {data['size']['tokens']:6,} tokens"
                  + ("  ERROR " + data["error"] if is_error else ""))
            slow |= hi >= 2.0 or is_error
        return 1 if slow else 0


if __name__ == "__main__":
    raise SystemExit(main())
