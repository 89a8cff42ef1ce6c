"""Benchmark of the LLM analysis pipeline against the loopback test server.

    python bench/analysis.py [--suite PATH] [--latency 0.2] [--concurrency 1 4 8 16] [--storm 0.1]

For each concurrency: fresh copies of the ingested store, `analyze` with the LLM analyst and
classifier pointed at tests/llm_server.py answering after a fixed latency (median of --repeats
runs, then a re-run on the same store, which must send nothing). Reports failures
analysed per second in stage 1, requests per failure, and the ratio to a reference measured in
the same run: a plain sequential loop sending the same stage-1 HTTP requests with urllib (no
litellm, no cache, no database).

Then a fault storm at concurrency 8: the server answers a --storm share of the requests with a
429 (Retry-After 1 s), a 500, an answer slower than the client's 1 s timeout, or truncated JSON.
Reported per distinct stage-1 prompt (a failure with its own (input, output) pair): requests
sent, requests billed (answered: valid, truncated, or answered after the client timed out), each
beside the floor any client faces at that storm (every fault retried once, nothing else sent),
and valid answers, which must be exactly 1; then requests per failure (failures sharing an
(input, output) pair share one request) and the requests of a re-run, which must be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-bench-not-a-real-key")

from llm_server import FakeLLMServer, server_process  # noqa: E402

MODEL = "openai/test-model"
DEFAULT_SUITE = ROOT.parent / "shared" / "fixtures" / "helm" / "safety-v4"


def reference_rate(bodies: list[dict], latency: float) -> float:
    """Requests per second of a sequential urllib loop over the same request bodies."""
    with server_process(latency) as api_base:
        url = api_base + "/chat/completions"
        started = time.perf_counter()
        for body in bodies:
            req = urllib.request.Request(
                url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(req) as resp:
                json.loads(resp.read())
        return len(bodies) / (time.perf_counter() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--repeats", type=int, default=3, help="runs per concurrency; the median is shown")
    ap.add_argument("--storm", type=float, default=0.1, help="share of requests answered with a fault in the storm run (0: skip it)")
    args = ap.parse_args()

    from ingest import ingest_paths
    from taxonomy import LLMSettings, analyze

    work = Path(tempfile.mkdtemp(prefix="bench-analysis-"))
    try:
        master = work / "master.duckdb"
        ingest_paths([args.suite], db=master)
        # record the exact stage-1 requests once, for the reference loop
        probe = work / "probe.duckdb"
        shutil.copy(master, probe)
        with FakeLLMServer() as srv:
            analyze(probe, MODEL, classifier="offline", settings=LLMSettings(api_base=srv.api_base))
            stage1_bodies = list(srv.requests)
        rows = []
        # the server runs in its own process so that its threads do not compete with the
        # pipeline for the GIL
        with server_process(args.latency) as api_base:
            for conc in args.concurrency:
                runs = []
                for rep in range(args.repeats):
                    db = work / f"c{conc}-{rep}.duckdb"
                    shutil.copy(master, db)
                    settings = LLMSettings(api_base=api_base, concurrency=conc)
                    s = analyze(db, MODEL, settings=settings)
                    again = analyze(db, MODEL, settings=settings)
                    runs.append((s.analysed_now / s.analysis_seconds, s, again))
                runs.sort(key=lambda r: r[0])
                rows.append((conc, runs[len(runs) // 2][1], runs[len(runs) // 2][2], [r[0] for r in runs]))
        ref = reference_rate(stage1_bodies, args.latency)
        storm = fault_storm(master, work, args.latency, args.storm) if args.storm else None
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"suite: {args.suite.name}; server latency {args.latency * 1000:.0f} ms; "
          f"reference (sequential urllib loop, same {len(stage1_bodies)} stage-1 requests): {ref:.1f} req/s")
    head = (f"{'concurrency':>11} {'failures':>8} {'requests':>8} {'req/failure':>11} {'stage-1 s':>9} "
            f"{'failures/s':>10} {'x reference':>11} {'total s':>7} {'re-run requests':>15}  all runs (failures/s)")
    print(head)
    print("-" * len(head))
    for conc, s, again, rates in rows:
        rate = s.analysed_now / s.analysis_seconds
        print(f"{conc:>11} {s.analysed_now:>8} {s.stats.requests:>8} {s.stats.requests / max(s.analysed_now, 1):>11.3f} "
              f"{s.analysis_seconds:>9.2f} {rate:>10.1f} {rate / ref:>11.2f} {s.seconds:>7.2f} {again.stats.requests:>15}  "
              + " ".join(f"{r:.1f}" for r in rates))
    if storm:
        print(storm)


def fault_storm(master: Path, work: Path, latency: float, rate: float) -> str:
    import duckdb

    from taxonomy import LLMSettings, analyze

    db = work / "storm.duckdb"
    shutil.copy(master, db)
    with server_process(latency, storm=rate, slow_seconds=1.5, retry_after="1") as api_base:
        settings = LLMSettings(api_base=api_base, concurrency=8, timeout=1.0, backoff_s=0.2)
        s = analyze(db, MODEL, settings=settings)
        again = analyze(db, MODEL, settings=settings)
    con = duckdb.connect(str(db), read_only=True)
    try:
        prompts = con.execute("SELECT count(DISTINCT pair_hash) FROM analyses").fetchone()[0]
        rows = dict(con.execute(
            """SELECT CASE WHEN status <> 'error' THEN status
                           WHEN error LIKE 'Timeout%' THEN 'timeout'
                           WHEN http_status = 429 THEN '429' ELSE '5xx' END, count(*)
               FROM llm_calls WHERE purpose = 'analysis' GROUP BY 1""").fetchall())
        classification = con.execute("SELECT count(*) FROM llm_calls WHERE purpose = 'classification'").fetchone()[0]
    finally:
        con.close()
    sent = sum(rows.values())
    billed = rows.get("ok", 0) + rows.get("invalid", 0) + rows.get("timeout", 0)
    # each request faults independently with probability `rate`, so even a client that retries
    # each fault exactly once and sends nothing else needs 1/(1 - rate) requests per prompt on
    # average; half the faults (truncated JSON, answers past the timeout) are billed
    floor_sent = 1 / (1 - rate)
    floor_billed = 1 + rate / 2 / (1 - rate)
    per_failure = s.stats.requests / max(s.analysed_now, 1)
    checks = {
        "each prompt answered (paid for) once": rows.get("ok", 0) == prompts and s.unanalysed == 0,
        "re-run sends nothing": again.stats.requests == 0,
        "≤ 1.05 requests per failure": per_failure <= 1.05,
    }
    return (
        f"\nfault storm ({rate:.0%} of requests; concurrency 8, client timeout 1 s): {s.analysed_now} failures, "
        f"{prompts} distinct stage-1 prompts\n"
        f"  stage-1 requests {sent} = {rows.get('ok', 0)} valid + {rows.get('invalid', 0)} truncated JSON + "
        f"{rows.get('429', 0)} x 429 + {rows.get('5xx', 0)} x 500 + {rows.get('timeout', 0)} timeouts; "
        f"{classification} classification requests\n"
        f"  per distinct prompt: requests {sent / prompts:.3f} (floor for any client at this storm: "
        f"{floor_sent:.3f}), billed {billed / prompts:.3f} (floor {floor_billed:.3f}), valid answers "
        f"{rows.get('ok', 0) / prompts:.3f}\n"
        f"  requests per failure {per_failure:.3f} (classification included); "
        f"{s.unanalysed} failures left without an answer\n"
        f"  re-run: {again.stats.requests} requests\n"
        f"  checks: " + "; ".join(f"{name}: {'yes' if ok else 'NO'}" for name, ok in checks.items())
    )


if __name__ == "__main__":
    main()
