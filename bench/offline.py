"""What the offline analyst makes of the demo and of the shared fixture logs, and how fast.

    python bench/offline.py [--fixtures PATH] [--repeats 3] [--json]

Builds the demo store (`demo.build_demo`, which analyses it offline) and one store per
top-level folder of the shared fixtures (`../shared/fixtures/*`, each ingested with
`ingest_paths`; folders whose ingest fails are reported and skipped), then runs
`taxonomy.analyze(db, "offline")` on fresh copies and reports per store: failures, how many got
a specific label (a category of the taxonomy, not Hard to Analyze or Other), how many were found
not to be a model error, how many were left Hard to Analyze / Other, the categories, and
failures analysed per second (the whole offline run — detectors, title classification, writes —
the median of --repeats runs, each on a fresh copy).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULT_FIXTURES = ROOT.parent / "shared" / "fixtures"
ABSTAIN = ("Hard to Analyze", "Other")
NOT_ERROR = "No Model Error"


def labels(db: Path) -> Counter:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        return Counter(dict(con.execute(
            "SELECT category, count(*) FROM failures WHERE analyst = 'offline' GROUP BY 1").fetchall()))
    finally:
        con.close()


def measure(name: str, master: Path, work: Path, repeats: int) -> dict:
    from taxonomy import analyze

    rates, seconds = [], []
    for i in range(repeats):
        db = work / f"{name}-{i}.duckdb"
        shutil.copy(master, db)
        started = time.perf_counter()
        summary = analyze(db, "offline")
        seconds.append(time.perf_counter() - started)
        rates.append(summary.analysed_now / seconds[-1])
    counts = labels(db)
    total = sum(counts.values())
    specific = sum(n for c, n in counts.items() if c not in ABSTAIN and c != NOT_ERROR)
    return {"store": name, "failures": total, "specific": specific,
            "specific_share": round(specific / total, 3) if total else None,
            "no_model_error": counts.get(NOT_ERROR, 0),
            "abstained": sum(counts.get(c, 0) for c in ABSTAIN),
            "failures_per_s": round(statistics.median(rates), 1), "seconds": round(statistics.median(seconds), 2),
            "categories": dict(counts.most_common())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", type=Path, default=DEFAULT_FIXTURES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from ingest import ingest_paths
    from demo import demo_inputs

    work = Path(tempfile.mkdtemp(prefix="bench-offline-"))
    rows, skipped = [], []
    try:
        stores = [("demo", demo_inputs())]
        if args.fixtures.is_dir():
            stores += [(p.name, [p]) for p in sorted(args.fixtures.iterdir()) if p.is_dir()]
            stores.append(("fixtures (all)", [p for p in sorted(args.fixtures.iterdir()) if p.is_dir()]))
        for name, paths in stores:
            master = work / f"{name.replace(' ', '_')}.duckdb"
            try:
                ingest_paths(paths, db=master)
            except Exception as exc:  # a folder another helper's reader cannot take yet
                skipped.append((name, str(exc).splitlines()[0][:200]))
                continue
            rows.append(measure(name.replace(" ", "_"), master, work, args.repeats))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps({"stores": rows, "skipped": skipped}, indent=2))
        return
    print(f"{'store':<18}{'failures':>9}{'specific':>16}{'no error':>9}{'abstain':>9}{'fail/s':>9}{'s':>7}")
    for r in rows:
        share = f"{r['specific']} ({r['specific_share']:.0%})" if r["failures"] else "0"
        print(f"{r['store']:<18}{r['failures']:>9}{share:>16}{r['no_model_error']:>9}{r['abstained']:>9}"
              f"{r['failures_per_s']:>9}{r['seconds']:>7}")
    for r in rows:
        print(f"{r['store']}: {r['categories']}")
    for name, why in skipped:
        print(f"skipped {name}: {why}")


if __name__ == "__main__":
    main()
