"""`python -m stats accuracy|signatures|power|leaderboard|compare|report|mcp`: accuracy with
intervals, each model's error-type shares with their error, how many questions a planned
comparison needs, which leaderboard ranks the data can tell apart, the comparison and the static
report from the command line, and the store served read-only to agents."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

import store
from core.counts import UNDER_THRESHOLD
from core.names import json_visible, visible_output
from core.numbers import arg_type, whole_number
from store import FaultlineError
from store import queries as q
from core.significance import ALPHA

from . import fmt
from .agents import agent_compare, agent_lines, compare_json
from .compare import (
    _json_number,
    check_known,
    compare,
    label_noise_line,
    undetected,
    mix_lines,
    pick_analyst,
    regressions,
    score_lines,
    test_text,
    verdict,
)
from .headline import (
    accuracy_rows,
    dataset_rules,
    headline_interval_text,
    headline_text,
    is_continuous,
    model_accuracy,
    parse_thresholds,
    usable_thresholds,
)
from .report import build_report
from .shares import ESTIMAND

_SPLIT_HELP = ("'main' (default): each run's main split, every row of a run without one; "
               "'all': every split; or a split name such as test or valid")
_THRESHOLD_HELP = ("the analysis threshold of a dataset judged on a continuous score, for this command "
                   "only: a prediction scoring below X fails (above X for a lower-is-better metric); "
                   "the stored verdicts stay as ingested. Repeat for several datasets")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m stats", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    a = sub.add_parser("accuracy", help="per model, dataset and split: the harness's own number with its "
                                        "95%% interval, and the failure rate under the analysis threshold")
    a.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    a.add_argument("--models", nargs="+", default=[])
    a.add_argument("--datasets", nargs="+", default=[])
    a.add_argument("--domains", nargs="+", default=[])
    a.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    a.add_argument("--threshold", nargs="+", default=[], metavar="DATASET=X", help=_THRESHOLD_HELP)
    a.add_argument("--json", action="store_true", help="print JSON (the summary goes to stderr)")

    g = sub.add_parser("signatures", help="each model's error-type shares with 95%% intervals that carry the "
                                          "analyst's measured misclassification (docs/stats.md)")
    g.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    g.add_argument("--analyst", help="whose labels (default: the one with the most)")
    g.add_argument("--models", nargs="+", default=[])
    g.add_argument("--datasets", nargs="+", default=[])
    g.add_argument("--domains", nargs="+", default=[])
    g.add_argument("--by", choices=["dataset", "domain"], help="one signature per model and dataset (or domain)")
    g.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    g.add_argument("--threshold", nargs="+", default=[], metavar="DATASET=X", help=_THRESHOLD_HELP)
    g.add_argument("--json", action="store_true", help="print JSON (the summary goes to stderr)")

    w = sub.add_parser("power", help="how many paired questions a planned comparison needs (exact McNemar, "
                                     "80%% power, α = 0.05)")
    w.add_argument("--baseline", type=_share, required=True, metavar="P",
                   help="model A's failure rate, a share in (0, 1), e.g. 0.3")
    w.add_argument("--diff", type=_share, required=True, metavar="D",
                   help="the difference in failure rate to detect (B − A), a share, e.g. 0.05")
    w.add_argument("--discordance", type=_share, metavar="X",
                   help="the share of questions the two models disagree on (default: as if their failures "
                        "were independent; `stats compare` on a pilot gives it as (A-only + B-only) / pairs)")
    w.add_argument("--json", action="store_true", help="print JSON")

    ld = sub.add_parser(
        "leaderboard", help="models ranked by the harness's number, with paired tests between adjacent ranks and "
                            "the groups the data cannot tell apart",
        description="Which ranks of a leaderboard the data can tell apart. Per dataset, models are ranked by the "
                    "harness's own number; each pair of adjacent ranks is tested on the questions both answered "
                    "(McNemar exact for pass/fail, Wilcoxon signed-rank for a score, the cluster-robust paired t "
                    "where questions share a passage or were tried more than once), with Benjamini-Hochberg "
                    "across the ladder; a new group starts below a step with q <= 0.05 (docs/stats.md).")
    ld.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    ld.add_argument("--dataset", help="one dataset's ladder (default: one per dataset)")
    ld.add_argument("--models", nargs="+", default=[], help="rank only these models")
    ld.add_argument("--domains", nargs="+", default=[])
    ld.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    ld.add_argument("--threshold", nargs="+", default=[], metavar="DATASET=X", help=_THRESHOLD_HELP)
    ld.add_argument("--json", action="store_true",
                    help="print JSON: with --dataset one ladder {dataset, metric, models, adjacent, groups, "
                         "unranked, rule}, else {\"leaderboards\": [...]} (the summary goes to stderr)")

    c = sub.add_parser("compare", help="paired comparison of two models' failures")
    c.add_argument("a", metavar="MODEL_A")
    c.add_argument("b", metavar="MODEL_B")
    c.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    c.add_argument("--datasets", nargs="+", default=[])
    c.add_argument("--domains", nargs="+", default=[])
    c.add_argument("--analyst", help="whose analyses to use (default: the one with the most)")
    c.add_argument("--split", default=q.MAIN_SPLIT, help=_SPLIT_HELP)
    c.add_argument("--threshold", nargs="+", default=[], metavar="DATASET=X", help=_THRESHOLD_HELP)
    c.add_argument("--unpaired", action="store_true",
                   help="compare error types over every analysed failure of each model, not only on the "
                        "questions both answered (a difference may then come from which datasets each ran)")
    c.add_argument("--json", action="store_true", help="print JSON (the summary goes to stderr)")
    c.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when B is significantly worse than A overall or in a category (q < 0.05)")

    r = sub.add_parser("report", help="write a static HTML report")
    r.add_argument("--db")
    r.add_argument("--models", nargs="+", default=[])
    r.add_argument("--datasets", nargs="+", default=[])
    r.add_argument("--domains", nargs="+", default=[])
    r.add_argument("--analyst")
    r.add_argument("--threshold", nargs="+", default=[], metavar="DATASET=X", help=_THRESHOLD_HELP)
    r.add_argument("--out", required=True, help="HTML file to write")

    m = sub.add_parser("mcp", help="serve the store read-only to agents over MCP (docs/mcp.md)")
    m.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    m.add_argument("--http", type=arg_type(whole_number, low=1, high=65535, what="a port number"), metavar="PORT",
                   help="serve over streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio")
    m.add_argument("--base-url", help="the dashboard's address in the answers' links (default: "
                                      "$FAULTLINE_BASE_URL, else http://localhost:8501)")
    m.add_argument("--answer-tokens", type=arg_type(whole_number, low=1, what="a number of tokens"), default=10_000,
                   metavar="N",
                   help="bound on every answer's size in estimated tokens (docs/mcp.md; default 10000)")
    return p


def _share(text: str) -> float:
    from core.numbers import NumberError, decimal_number

    try:
        value = decimal_number(text, "")
    except NumberError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a share between 0 and 1 (exclusive)")
    return value


def _power(args) -> int:
    from core.power import POWER, discordance_if_independent, mcnemar_power, pairs_needed

    if args.baseline + args.diff >= 1:
        raise FaultlineError(f"--baseline {args.baseline:g} plus --diff {args.diff:g} is not a failure rate below 1")
    psi = args.discordance if args.discordance is not None else discordance_if_independent(args.baseline, args.diff)
    if args.diff > psi:
        raise FaultlineError(f"a difference of {args.diff:g} needs the models to disagree on at least that share of "
                             f"the questions; --discordance is {psi:g}")
    n = pairs_needed(args.baseline, args.diff, args.discordance)
    out = {"baseline": args.baseline, "diff": args.diff, "discordance": psi,
           "discordance_from": "given" if args.discordance is not None else "independent failures",
           "alpha": ALPHA, "power": POWER, "test": "exact McNemar (two-sided)", "pairs": n,
           "power_at_pairs": mcnemar_power(n, psi, args.diff) if n else None}
    if args.json:
        print(json.dumps(out, indent=2))
    elif n is None:
        print(f"more than 200,000 paired questions: a difference of {fmt.pct(args.diff)} in failure rate is too "
              f"small to detect at a discordance of {fmt.pct(psi)}")
    else:
        print(f"{fmt.count(n)} paired questions detect a difference of {fmt.pct(args.diff)} in failure rate "
              f"(A {fmt.pct(args.baseline)}, B {fmt.pct(args.baseline + args.diff)}) with "
              f"{fmt.pct(out['power_at_pairs'])} power at α = {ALPHA:g} (exact McNemar), when the models disagree on "
              f"{fmt.pct(psi)} of the questions ({out['discordance_from']})")
    return 0


def _leaderboard(args) -> int:
    from .leaderboard import ladder_lines, leaderboard, leaderboards

    with store.read_connection(args.db) as con:
        check_known(con, args.models, [args.dataset] if args.dataset else [], args.domains, args.split)
        thresholds = _thresholds(con, args)
        if args.dataset:
            ladders = [leaderboard(con, args.dataset, args.models or None, args.domains or None, args.split,
                                   thresholds or None)]
        else:
            ladders = leaderboards(con, None, args.models or None, args.domains or None, args.split,
                                   thresholds or None)
    if args.json:
        out = ladders[0].to_json() if args.dataset else {"leaderboards": [x.to_json() for x in ladders]}
        print(json_visible(json.dumps(out, indent=2, ensure_ascii=False)))
    else:
        for ladder in ladders:
            print("\n".join(ladder_lines(ladder)))
    steps = sum(len(x.steps) for x in ladders)
    separating = sum(1 for x in ladders for s in x.steps if s.separates)
    print(f"leaderboards of {fmt.plural(len(ladders), 'dataset')}: {fmt.plural(steps, 'adjacent test')}, "
          f"{separating} separating (q ≤ {ALPHA:g}, Benjamini–Hochberg across each ladder)",
          file=sys.stderr if args.json else sys.stdout)
    return 0


def _thresholds(con, args) -> dict[str, float]:
    """--threshold as {dataset: line}, every one checked: a dataset judged on a continuous score,
    a line inside its scale. Bad ones are refused with the reason (exit 2), never dropped."""
    try:
        asked = parse_thresholds(args.threshold)
    except ValueError as exc:
        raise FaultlineError(f"--threshold {exc}") from None
    kept, dropped = usable_thresholds(dataset_rules(con), asked)
    if dropped:
        raise FaultlineError("--threshold: " + "; ".join(dropped))
    return kept


def _table(header: list[str], rows: list[list]) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for row in [header, *rows]:
        print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)))


def _accuracy(args) -> int:
    with store.read_connection(args.db) as con:
        check_known(con, args.models, args.datasets, args.domains, args.split)
        thresholds = _thresholds(con, args)
        acc = model_accuracy(con, args.models, args.datasets, args.domains, by="split",
                             split=args.split, thresholds=thresholds)
    rows = accuracy_rows(acc)
    if args.json:
        print(json_visible(json.dumps(rows, indent=2, ensure_ascii=False)))
    else:
        _table(["model", "dataset", "split", "n", "harness's number", "95% CI", "interval",
                UNDER_THRESHOLD.name],
               [[r["model"], r["dataset"], r["split"] or "-", fmt.count(r["n"]), headline_text(r),
                 headline_interval_text(r), r["headline_interval"] or "-",
                 f"{fmt.count(r['failures'])} ({fmt.pct(r['failure_rate'])})" if is_continuous(r) else "same number"]
                for r in acc.iter_rows(named=True)])
        for r in acc.iter_rows(named=True):
            if r["headline_note"]:
                print(f"note: {r['model']} on {r['dataset']}: {r['headline_note']}")
        rules = dict.fromkeys((r["dataset"], r["analysis_rule"]) for r in acc.iter_rows(named=True)
                              if is_continuous(r))
        for dataset, rule in rules:
            print(f"{dataset}: {rule}; change it with --threshold {dataset}=X")
    which = {q.MAIN_SPLIT: "main split of each run", q.ALL_SPLITS: "all splits"}.get(
        args.split, f"split {args.split}")
    continuous = sum(1 for r in rows if is_continuous(r))
    print(f"accuracy of {acc['model'].n_unique()} models on {acc['dataset'].n_unique()} datasets "
          f"({which}): {len(rows)} rows, {int(acc['n'].sum()) if rows else 0} scored predictions"
          + (f", {continuous} on a continuous metric (mean score; {UNDER_THRESHOLD.name} apart)"
             if continuous else ""),
          file=sys.stderr if args.json else sys.stdout)
    return 0


def _signatures(args) -> int:
    from .signatures import share_rows, shares

    with store.read_connection(args.db) as con:
        check_known(con, args.models, args.datasets, args.domains, args.split)
        thresholds = _thresholds(con, args)
        analyst = pick_analyst(con, args.analyst, args.models or None, args.datasets or None,
                               args.domains or None, args.split)
        if analyst is None:
            raise FaultlineError("no analysed failures yet; run `python -m taxonomy analyze`")
        est = shares(con, analyst, args.models or None, args.datasets or None, args.domains or None,
                     args.by, args.split, thresholds or None)
    keys = ["model"] + ([args.by] if args.by else [])
    rows = share_rows(est).select(*keys, "category", "share", "share_low", "share_high", "count", "people", "failures",
                       "reviewed", "unmeasured", "reviews_used", "corrected")
    if args.json:
        out = {"analyst": analyst, "estimand": ESTIMAND, "method": est.method,
               "rows": [{k: _json_number(v) for k, v in r.items()} for r in rows.to_dicts()]}
        print(json_visible(json.dumps(out, indent=2, ensure_ascii=False)))
    else:
        print(f"{ESTIMAND}\n{est.method}")
        _table([*keys, "category", "share", "95% interval", "analyst's count", "people's labels", "failures"],
               [[*(r[k] for k in keys), r["category"], fmt.pct(r["share"]),
                 f"{fmt.pct(r['share_low'])}–{fmt.pct(r['share_high'])}", fmt.count(r["count"]),
                 fmt.count(r["people"]), fmt.count(r["failures"])] for r in rows.iter_rows(named=True)])
    print(f"signatures of {rows['model'].n_unique()} models by {analyst}: {rows.height} rows, "
          + (f"corrected with {fmt.plural(est.reviews, 'people' + chr(39) + 's label')}" if est.corrected
             else "analyst accuracy not measured (sampling error only): review failures with "
                  "`python -m taxonomy review-sample`"),
          file=sys.stderr if args.json else sys.stdout)
    return 0


def _print_table(result) -> None:
    print(f"{result.a} (A) vs {result.b} (B), analyst: {result.analyst or 'none'}")
    print(verdict(result))
    for line in mix_lines(result):
        print(f"note: {line}")
    if not result.categories and not result.not_error_types:
        print("No labelled failures of these models: run `python -m taxonomy analyze` first.")
    elif result.categories:
        corrected = any(c.corrected_delta is not None for c in result.categories)
        header = ["category", "A n", "B n", "A share", "B share", "p_fisher", "q_bh", "p_paired",
                  "p_errormap*", *(["B − A corrected (95%)"] if corrected else []), "finding"]
        rows = [[c.category, fmt.count(c.a_count), fmt.count(c.b_count), fmt.pct(c.a_share),
                 fmt.pct(c.b_share), fmt.p_value(c.p_fisher), fmt.p_value(c.q_bh),
                 fmt.p_value(c.p_paired), fmt.p_value(c.p_errormap),
                 *([_corrected_text(c)] if corrected else []), c.finding]
                for c in result.categories]
        _table(header, rows)
        print(label_noise_line(result))
        where = ("every analysed failure (--unpaired)" if result.unpaired
                 else f"the {fmt.plural(result.n_pairs, 'question')} both answered")
        print(f"Failures with an error type on {where}: A {fmt.count(result.a_total)}, B "
              f"{fmt.count(result.b_total)} (shares are of these). * p_errormap is the ErrorMap paper's "
              "check, shown for parity (it overstates significance).")
    else:
        print("No failure of either model has an error type: nothing to test.")
    if result.not_error_types:
        print("Not error types (counted apart, never tested; shares of all labelled failures): "
              + "; ".join(f"{c.category} A {fmt.count(c.a_count)} ({fmt.pct(c.a_share)}), "
                          f"B {fmt.count(c.b_count)} ({fmt.pct(c.b_share)})"
                          for c in result.not_error_types))
    if len(result.by_dataset) > 1 or any(d.scores or d.clustered for d in result.by_dataset):
        print("\nPer dataset (paired questions; q: Benjamini–Hochberg over the datasets' paired tests):")
        for d in result.by_dataset:
            print(f"  {d.dataset}: {fmt.plural(d.n_pairs, 'question')}, only A fails {fmt.count(d.a_only_fail)}, "
                  f"only B fails {fmt.count(d.b_only_fail)}, {test_text(d)}, q = {fmt.p_value(d.q)}"
                  + (undetected(d.mde) if d.q is not None and d.q > ALPHA else ""))
            if d.clustered:
                print(f"    clustered: {d.clustered.kind}; {fmt.plural(d.clustered.trials, 'trial')} of the two "
                      f"models in {fmt.plural(d.clustered.clusters, 'cluster')}")
            for line in score_lines(d):
                print(f"    {line}")


def _corrected_text(c) -> str:
    if c.corrected_delta is None:
        return "–"
    return (f"{fmt.signed_pct(c.corrected_delta)} ({fmt.signed_pct(c.corrected_low)} to "
            f"{fmt.signed_pct(c.corrected_high)})")


def _compare(args) -> int:
    with store.read_connection(args.db) as con:
        thresholds = _thresholds(con, args)
        result = compare(con, args.a, args.b, args.datasets, args.domains, args.analyst, args.split,
                         thresholds=thresholds, unpaired=args.unpaired)
        agents = agent_compare(con, result.a, result.b, result.analyst, args.datasets, args.domains, args.split)
    if args.json:
        print(json_visible(json.dumps(compare_json(result, agents), indent=2, ensure_ascii=False)))
    else:
        _print_table(result)
        for line in agent_lines(agents) if agents else []:
            print(line)
    summary_to = sys.stderr if args.json else sys.stdout
    failed = regressions(result) if args.fail_on_regression else []
    for reason in failed:
        print(f"regression: {reason}", file=sys.stderr)
    print(
        f"compared {result.a} vs {result.b}: {result.n_pairs} pairs ({result.pairs_by_id} by id, "
        f"{result.pairs_by_content} by question text), A-only failures "
        f"{result.a_only_fail}, B-only {result.b_only_fail}, p = {fmt.p_value(result.p)}, "
        f"{fmt.plural(len(result.categories), 'error type')} tested"
        + (" on every failure (--unpaired)" if args.unpaired else " on the paired questions")
        + (f", {fmt.plural(len(failed), 'regression')}" if args.fail_on_regression else ""),
        file=summary_to,
    )
    return 1 if failed else 0


def _report(args) -> int:
    with store.read_connection(args.db) as con:
        thresholds = _thresholds(con, args)
        html, summary = build_report(con, args.models, args.datasets, args.domains, args.analyst,
                                     thresholds=thresholds)
    out = Path(args.out)
    try:
        out.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise FaultlineError(f"{out}: cannot write the report: {exc.strerror}") from None
    print(f"wrote {out}: {summary}")
    return 0


def _mcp(args) -> int:
    # the SDK is imported by this command alone: the others never pay for it
    from mcp_server.server import run

    return run(args.db, args.http, args.base_url, args.answer_tokens)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "mcp":  # its stdout is the protocol's; its answers escape themselves (budget.dumps)
        return _run(args)
    # names and texts printed show invisible characters as <U+XXXX> (core/names.py)
    with visible_output():
        return _run(args)


def _run(args) -> int:
    try:
        return {"accuracy": _accuracy, "signatures": _signatures, "power": _power, "leaderboard": _leaderboard, "compare": _compare,
                "report": _report, "mcp": _mcp}[args.command](args)
    except FaultlineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except duckdb.Error as exc:
        # a store this Faultline cannot read (damaged, or changed by hand) is bad input, not a crash
        print(f"error: {store.resolve_db_path(args.db)}: cannot read the store: {exc}", file=sys.stderr)
        return 2
