"""`python -m stats accuracy|compare|report|mcp`: accuracy with intervals, the comparison and the
static report from the command line, and the store served read-only to agents."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

import store
from store import FaultlineError
from store import queries as q

from . import fmt
from .compare import check_known, compare, regressions, verdict
from .report import build_report
from .signatures import model_accuracy

_SPLIT_HELP = ("'main' (default): each run's main split, every row of a run without one; "
               "'all': every split; or a split name such as test or valid")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m stats", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("accuracy", help="accuracy per model, dataset and split with Wilson 95%% intervals")
    a.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    a.add_argument("--models", nargs="+", default=[])
    a.add_argument("--datasets", nargs="+", default=[])
    a.add_argument("--domains", nargs="+", default=[])
    a.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    a.add_argument("--json", action="store_true", help="print JSON (the summary goes to stderr)")

    c = sub.add_parser("compare", help="paired comparison of two models' failures")
    c.add_argument("a", metavar="MODEL_A")
    c.add_argument("b", metavar="MODEL_B")
    c.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    c.add_argument("--datasets", nargs="+", default=[])
    c.add_argument("--domains", nargs="+", default=[])
    c.add_argument("--analyst", help="whose analyses to use (default: the one with the most)")
    c.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    c.add_argument("--json", action="store_true", help="print JSON (the summary goes to stderr)")
    c.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when B is significantly worse than A overall or in a category (q < 0.05)")

    r = sub.add_parser("report", help="write a static HTML report")
    r.add_argument("--db")
    r.add_argument("--models", nargs="+", default=[])
    r.add_argument("--datasets", nargs="+", default=[])
    r.add_argument("--domains", nargs="+", default=[])
    r.add_argument("--analyst")
    r.add_argument("--out", required=True, help="HTML file to write")

    m = sub.add_parser("mcp", help="serve the store read-only to agents over MCP (docs/mcp.md)")
    m.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    m.add_argument("--http", type=int, metavar="PORT",
                   help="serve over streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio")
    m.add_argument("--base-url", help="the dashboard's address in the answers' links (default: "
                                      "$FAULTLINE_BASE_URL, else http://localhost:8501)")
    m.add_argument("--answer-tokens", type=int, default=10_000, metavar="N",
                   help="bound on every answer's size in estimated tokens (docs/mcp.md; default 10000)")
    return p


def _table(header: list[str], rows: list[list]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def _accuracy(args) -> int:
    with store.read_connection(args.db) as con:
        check_known(con, args.models, args.datasets, args.domains, args.split)
        acc = model_accuracy(con, args.models, args.datasets, args.domains, by="split",
                             split=args.split)
    keys = ("model", "dataset", "split", "n", "correct", "accuracy", "ci_low", "ci_high")
    rows = acc.select(keys).to_dicts()
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        _table(["model", "dataset", "split", "n", "correct", "accuracy", "95% CI"],
               [[r["model"], r["dataset"], r["split"] or "-", fmt.count(r["n"]), fmt.count(r["correct"]),
                 fmt.pct(r["accuracy"]), fmt.interval(r["ci_low"], r["ci_high"], r["n"])] for r in rows])
    which = {q.MAIN_SPLIT: "main split of each run", q.ALL_SPLITS: "all splits"}.get(
        args.split, f"split {args.split}")
    print(f"accuracy of {acc['model'].n_unique()} models on {acc['dataset'].n_unique()} datasets "
          f"({which}): {len(rows)} rows, {int(acc['n'].sum()) if rows else 0} scored predictions",
          file=sys.stderr if args.json else sys.stdout)
    return 0


def _print_table(result) -> None:
    print(f"{result.a} (A) vs {result.b} (B), analyst: {result.analyst or 'none'}")
    print(verdict(result))
    if not result.categories and not result.not_error_types:
        print("No classified failures for these models: run `python -m taxonomy analyze` first.")
        return
    if result.categories:
        header = ["category", "A n", "B n", "A share", "B share", "p_fisher", "q_bh", "p_paired",
                  "p_errormap*", "finding"]
        rows = [[c.category, fmt.count(c.a_count), fmt.count(c.b_count), fmt.pct(c.a_share),
                 fmt.pct(c.b_share), fmt.p_value(c.p_fisher), fmt.p_value(c.q_bh),
                 fmt.p_value(c.p_paired), fmt.p_value(c.p_errormap), c.finding]
                for c in result.categories]
        _table(header, rows)
        print(f"Failures with an error type: A {fmt.count(result.a_total)}, B {fmt.count(result.b_total)}"
              " (shares are of these). * p_errormap is the ErrorMap paper's check, shown for parity "
              "(it overstates significance).")
    else:
        print("No failure of either model has an error type: nothing to test.")
    if result.not_error_types:
        print("Not error types (counted apart, never tested; shares of all labelled failures): "
              + "; ".join(f"{c.category} A {fmt.count(c.a_count)} ({fmt.pct(c.a_share)}), "
                          f"B {fmt.count(c.b_count)} ({fmt.pct(c.b_share)})"
                          for c in result.not_error_types))


def _compare(args) -> int:
    with store.read_connection(args.db) as con:
        result = compare(con, args.a, args.b, args.datasets, args.domains, args.analyst, args.split)
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        _print_table(result)
    summary_to = sys.stderr if args.json else sys.stdout
    failed = regressions(result) if args.fail_on_regression else []
    for reason in failed:
        print(f"regression: {reason}", file=sys.stderr)
    print(
        f"compared {result.a} vs {result.b}: {result.n_pairs} pairs ({result.pairs_by_id} by id, "
        f"{result.pairs_by_content} by question text), A-only failures "
        f"{result.a_only_fail}, B-only {result.b_only_fail}, p = {fmt.p_value(result.p)}, "
        f"{fmt.plural(len(result.categories), 'error type')} tested"
        + (f", {fmt.plural(len(failed), 'regression')}" if args.fail_on_regression else ""),
        file=summary_to,
    )
    return 1 if failed else 0


def _report(args) -> int:
    with store.read_connection(args.db) as con:
        html, summary = build_report(con, args.models, args.datasets, args.domains, args.analyst)
    out = Path(args.out)
    try:
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise FaultlineError(f"{out}: cannot write the report: {exc.strerror}") from None
    print(f"wrote {out}: {summary}")
    return 0


def _mcp(args) -> int:
    # the SDK is imported by this command alone: the others never pay for it
    from .mcp_server import run

    return run(args.db, args.http, args.base_url, args.answer_tokens)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"accuracy": _accuracy, "compare": _compare, "report": _report, "mcp": _mcp}[args.command](args)
    except FaultlineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except duckdb.Error as exc:
        # a store this Faultline cannot read (damaged, or changed by hand) is bad input, not a crash
        print(f"error: {store.resolve_db_path(args.db)}: cannot read the store: {exc}", file=sys.stderr)
        return 2
