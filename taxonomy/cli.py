"""`python -m taxonomy analyze|verify|classify|agreement|labels|discover` — thin argument handling around the taxonomy package."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import fields
from pathlib import Path

from core.counts import TO_ANALYSE
from core.names import json_visible, visible_output
from core.numbers import NumberError, decimal_number, whole_number
from store import FaultlineError

from .budget import DEFAULT_MAX_TOKENS
from .classify import DEFAULT_BATCH_SIZE, OFFLINE
from .context import DEFAULT_CONTEXT_TOKENS
from .select import SAMPLE_SEED
from .settings import LLMSettings

# the analyst used when --analyst is omitted: the first provider with a key in the environment
DEFAULT_MODELS = [
    ("OPENAI_API_KEY", "openai/gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-3-5-haiku-latest"),
]


def default_analyst() -> str:
    for env, model in DEFAULT_MODELS:
        if os.environ.get(env):
            return model
    return OFFLINE


def _number(kind: type, ok, requirement: str):
    """An argparse type: read as a whole number (kind int) or a finite decimal (kind float) in
    ASCII digits (core.numbers: int() takes "٣", float() "1e999" and "nan"), then require
    `ok(value)`."""
    read = whole_number if kind is int else decimal_number

    def parse(text: str):
        try:
            value = read(text, "", low=None)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None
        if not ok(value):
            raise argparse.ArgumentTypeError(f"{requirement}, got {value}")
        return value

    return parse


_ratio = _number(float, lambda v: 0 < v <= 1, "must be in (0, 1]")
_positive_int = _number(int, lambda v: v >= 1, "must be at least 1")
_money = _number(float, lambda v: v >= 0, "must not be negative")
_seconds = _number(float, lambda v: v > 0, "must be positive")


def _prices(given: list[list[str]]) -> dict[str, tuple[float, float]]:
    prices = {}
    for model, p_in, p_out in given:
        try:
            prices[model] = (_money(p_in), _money(p_out))
        except argparse.ArgumentTypeError as exc:
            raise FaultlineError(f"--price {model}: {exc}") from None
    return prices


def llm_settings(args: argparse.Namespace) -> LLMSettings:
    """The run's LLM configuration from its command's flags, each flag to the setting of its name
    (--price to prices); a setting the command has no flag for keeps its default."""
    given = {f.name: getattr(args, f.name) for f in fields(LLMSettings) if hasattr(args, f.name)}
    if hasattr(args, "price"):
        given["prices"] = _prices(args.price)
    return LLMSettings(**given)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m taxonomy", description="Analyse and classify benchmark failures.")
    sub = ap.add_subparsers(dest="command", required=True)

    def llm_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
        p.add_argument("--api-base", help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
        p.add_argument("--concurrency", type=_positive_int, default=4, help="requests in flight at once (default 4)")
        p.add_argument("--taxonomy", metavar="FILE", help="a custom taxonomy (YAML or JSON); default erroratlas-v1")
        p.add_argument("--batch-size", type=_positive_int, default=DEFAULT_BATCH_SIZE, help="titles per classification call (default 50)")
        p.add_argument("--timeout", type=_seconds, default=120.0, help="seconds before a request is retried (default 120)")
        p.add_argument("--max-tokens", type=_positive_int, default=DEFAULT_MAX_TOKENS,
                       help=f"most tokens an answer may take, reasoning included (default {DEFAULT_MAX_TOKENS})")
        retry_option(p)

    a = sub.add_parser(
        "analyze", help="analyse failures (stage 1) and classify their error titles (stage 3)",
        description=f"Name the first major error of each of the {TO_ANALYSE.name} ({TO_ANALYSE.rule}), "
                    "then file its title under the taxonomy. A failure analysed before, or an identical "
                    "(input, output) pair, is not analysed again. The counts: docs/stats.md; the method: "
                    "docs/analysis.md.")
    a.add_argument("--analyst", default=None,
                   help="'offline' or a litellm model (openai/..., anthropic/..., ollama_chat/..., hosted_vllm/...); "
                        "default: a model for the API key in the environment, else offline")
    a.add_argument("--classifier", help="stage-3 classifier: 'offline' or a litellm model (default: the analyst; offline for the offline analyst)")
    a.add_argument("--max-cost", type=_money, help="never spend more than this many USD (each request reserves its worst case)")
    a.add_argument("--price", nargs=3, action="append", default=[], metavar=("MODEL", "IN", "OUT"),
                   help="USD per million input and output tokens of MODEL, for a model litellm has no price for")
    batch_options(a)
    a.add_argument("--sample", type=_ratio, help="analyse this ratio of the failures of each (model, dataset) pair")
    a.add_argument("--models", nargs="+", default=[], metavar="M", help="only these models, as the logs name them")
    a.add_argument("--datasets", nargs="+", default=[], metavar="D", help="only these datasets")
    a.add_argument("--context-tokens", type=_positive_int, metavar="N",
                   help="the analyst's context window in tokens, for a model litellm does not know "
                        f"(default: litellm's model info, else {DEFAULT_CONTEXT_TOKENS})")
    llm_options(a)

    v = sub.add_parser("verify", help="a second LLM judges whether each analysis correctly explains its failure")
    v.add_argument("--verifier", required=True, metavar="MODEL", help="the judging litellm model (best another model than the analyst)")
    v.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
    v.add_argument("--analyst", help="whose analyses to verify (default: the analyst with the most labels)")
    v.add_argument("--sample", type=_positive_int, metavar="N",
                   help="verify N analyses, a fixed pseudo-random sample (default: all)")
    v.add_argument("--models", nargs="+", default=[], metavar="M", help="only failures of these models")
    v.add_argument("--datasets", nargs="+", default=[], metavar="D", help="only failures on these datasets")
    v.add_argument("--max-cost", type=_money, help="never spend more than this many USD (each request reserves its worst case)")
    v.add_argument("--price", nargs=3, action="append", default=[], metavar=("MODEL", "IN", "OUT"),
                   help="USD per million input and output tokens of MODEL, for a model litellm has no price for")
    v.add_argument("--api-base", help="base URL of an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    v.add_argument("--concurrency", type=_positive_int, default=4, help="requests in flight at once (default 4)")
    v.add_argument("--timeout", type=_seconds, default=120.0, help="seconds before a request is retried (default 120)")
    v.add_argument("--max-tokens", type=_positive_int, default=DEFAULT_MAX_TOKENS,
                   help=f"most tokens an answer may take, reasoning included (default {DEFAULT_MAX_TOKENS})")
    v.add_argument("--context-tokens", type=_positive_int, metavar="N",
                   help=f"the verifier's context window in tokens, for a model litellm does not know (default {DEFAULT_CONTEXT_TOKENS})")
    v.add_argument("--json", action="store_true", help="print the acceptance rate as JSON")
    batch_options(v)
    retry_option(v)

    c = sub.add_parser("classify", help="classify error titles read from stdin; prints title<TAB>category")
    c.add_argument("--classifier", default=OFFLINE, help="'offline' (default) or a litellm model")
    llm_options(c)

    g = sub.add_parser("agreement", help="agreement of an analyst's categories with reviews, a gold file or another analyst")
    g.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
    g.add_argument("--analyst", help="whose categories to measure (default: the analyst with the most)")
    g.add_argument("--against", default="reviews", metavar="reviews|ANALYST",
                   help="the reference: 'reviews' (human reviews, default) or another analyst on the same failures")
    g.add_argument("--gold", metavar="FILE", help="the reference from a CSV with columns dataset, instance_id, model, category")
    g.add_argument("--models", nargs="+", default=[], metavar="M", help="only these models")
    g.add_argument("--datasets", nargs="+", default=[], metavar="D", help="only these datasets")
    g.add_argument("--json", action="store_true", help="print the report as JSON")

    lb = sub.add_parser("labels", help="load people's labels of failures (a label table, or Who&When logs) as reviews")
    lb.add_argument("paths", nargs="+", metavar="PATH",
                    help="a label table (.csv or .jsonl: dataset, model, instance_id, category; optional "
                         "train_trial_index, step, agent, reviewer, note), or Who&When logs (a .json file or a "
                         "folder of them, ingested first)")
    lb.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
    lb.add_argument("--reviewer", help="who made the labels (a table's reviewer column wins; default for "
                                       "Who&When logs: 'Who&When annotators')")

    rs = sub.add_parser(
        "review-sample", help="draw failures for people to label: a seeded random sample "
                              "stratified by the analyst's label, stored with its weights",
        description="Draw failures for people to label, to measure how right the analyst is. The sample is "
                    "seeded and stratified by the analyst's label (half shared equally between labels so rare "
                    "ones are seen, half in proportion to size) and stored with each stratum's size, so every "
                    "figure over it describes all of the analyst's failures. Fill in the written table's "
                    "category column, then: python -m taxonomy labels FILE && python -m taxonomy calibrate.")
    rs.add_argument("--n", type=_positive_int, default=50, help="how many failures to draw (default 50)")
    rs.add_argument("--analyst", help="whose labels to stratify by (default: the analyst with the most labels)")
    rs.add_argument("--seed", type=int, default=SAMPLE_SEED, help=f"the draw's seed (default {SAMPLE_SEED})")
    rs.add_argument("--models", nargs="+", default=[], metavar="M", help="only failures of these models")
    rs.add_argument("--datasets", nargs="+", default=[], metavar="D", help="only failures on these datasets")
    rs.add_argument("--out", metavar="FILE", help="write the sample as a label table (CSV) to fill in "
                                                  "(default: print it as CSV)")
    rs.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")

    cb = sub.add_parser(
        "calibrate", help="measure an analyst against people's labels (precision, recall, κ, "
                          "confusion; on all and on a test half) and store the result",
        description="Measure an analyst against people's labels: per-category precision and recall, agreement, "
                    "Cohen's κ with a stratified bootstrap interval, the confusion matrix, specific-label "
                    "precision and abstention, each review weighted by its stratum; on every review and on a "
                    "test half. The result is stored with the taxonomy and prompt versions it holds for, and "
                    "every error-type share is then corrected for the measured confusion (docs/stats.md).")
    cb.add_argument("--analyst", help="the analyst to measure (default: the analyst with the most labels)")
    cb.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
    cb.add_argument("--json", action="store_true", help="print the measurement as JSON")

    d = sub.add_parser("discover", help="cluster the error titles filed under Other into candidate new categories")
    d.add_argument("--db", help="database file (default: $FAULTLINE_DB or data/faultline.duckdb)")
    d.add_argument("--analyst", help="whose titles to cluster (default: the analyst with the most labels); "
                                     "an LLM analyst also names the clusters")
    d.add_argument("--all", action="store_true", help="cluster every analysed failure, not only those under Other")
    d.add_argument("--stdin", action="store_true", help="cluster titles read from stdin; prints title<TAB>cluster name")
    d.add_argument("--json", action="store_true", help="print the candidates as JSON")
    d.add_argument("--adopt", nargs="+", metavar="NAME", help="add these candidates to a new taxonomy version and re-classify (stage 3 only)")
    d.add_argument("--version", help="version string of the adopted taxonomy (default: <base>+discovered-<hash>)")
    d.add_argument("--out", metavar="FILE", help="where to write the adopted taxonomy YAML (default: next to the database)")
    d.add_argument("--api-base", help="base URL of an OpenAI-compatible server for the LLM analyst")
    d.add_argument("--concurrency", type=_positive_int, default=4, help="requests in flight at once (default 4)")
    d.add_argument("--timeout", type=_seconds, default=120.0, help="seconds before a request is retried (default 120)")
    return ap


def _review_sample(args) -> int:
    from .calibration import NOT_ANALYSED, review_sample, sample_csv

    analyst, sample = review_sample(args.db, args.analyst, args.n, args.seed, args.models, args.datasets)
    if args.out:
        Path(args.out).write_text(sample_csv(sample), encoding="utf-8")
        where = args.out
    else:
        sys.stdout.write(sample_csv(sample))
        where = "stdout"
    strata = sample["analyst_category"].fill_null(NOT_ANALYSED).n_unique() if sample.height else 0
    print(f"{sample.height} failures of {analyst} drawn (seed {args.seed}) from {strata} of its labels, written to "
          f"{where}; fill in the category column and load it with `python -m taxonomy labels FILE --reviewer NAME`",
          file=sys.stderr)
    return 0


def _calibration_text(result) -> str:
    lines = [result.line(), "", "label                              precision  recall  reviewed"]
    for c, m in sorted(result.report["all"]["per_category"].items()):
        p = "–" if m["precision"] is None else f"{m['precision']:.0%}"
        r = "–" if m["recall"] is None else f"{m['recall']:.0%}"
        lines.append(f"{c[:34]:<34} {p:>9} {r:>7} {m['reviewed_as_analyst']:>9}")
    return "\n".join(lines)


def _discover(args) -> int:
    import json

    from .discover import adopt, cluster_titles, discover

    if args.stdin:
        titles = [t for t in (" ".join(line.split()) for line in sys.stdin) if t]
        pairs = cluster_titles(titles)
        for title, name in pairs:
            print(f"{title}\t{name}")
        print(f"{len(titles)} titles in {len({n for _, n in pairs})} clusters", file=sys.stderr)
        return 0
    if args.adopt:
        done = adopt(args.db, args.analyst, args.adopt, all_failures=args.all, version=args.version, out=args.out,
                     settings=llm_settings(args))
        print(f"taxonomy {done.version} = {done.base_version} + {', '.join(done.added)} (written to {done.taxonomy_file}); "
              f"{done.titles_reclassified} titles re-classified, {done.classification_requests} classification requests, "
              "0 analysis requests")
        return 0
    found = discover(args.db, args.analyst, args.all, settings=llm_settings(args))
    if args.json:
        print(json_visible(json.dumps([c.as_json() for c in found.candidates], indent=2, ensure_ascii=False)))
    else:
        for c in found.candidates:
            per_model = ", ".join(f"{m} {n}" for m, n in c.per_model().items())
            print(f"{c.name}\t{c.size} failures ({per_model})\n  {c.description}\n  e.g. {'; '.join(c.examples())}")
            for t in c.titles[:5]:
                print(f"    - {t}")
    print(f"{len(found.candidates)} candidate categories from {found.scope} of {found.analyst} "
          f"({found.unclustered} failures in no cluster of 2+); {found.requests} requests sent", file=sys.stderr)
    return 0


def retry_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--retry-cut-off", action="store_true",
                   help="ask again the prompts whose answers an earlier run got cut off at --max-tokens "
                        "(they are cached and not bought again otherwise; raise --max-tokens with it)")

def batch_options(p: argparse.ArgumentParser) -> None:
    """The provider batch API flags, the same for every command that sends LLM requests."""
    p.add_argument("--batch", action="store_true",
                   help="send through the provider's batch API (about half the price; answers within 24 h); "
                        "the run waits for the batches, and --resume collects them if it is stopped")
    p.add_argument("--resume", action="store_true",
                   help="collect the batches an earlier run submitted (after a crash, a kill or a restart), then go on")
    p.add_argument("--poll-interval", type=_number(float, lambda v: v > 0, "must be positive"), default=30.0,
                   metavar="S", help="seconds between checks of a submitted batch (default 30)")

def _verify(args, progress: bool) -> int:
    import json

    from .verify import verify

    summary = verify(
        args.db, args.verifier, analyst=args.analyst, sample=args.sample, models=args.models, datasets=args.datasets,
        settings=llm_settings(args), progress=progress, log=lambda msg: print(msg, file=sys.stderr),
    )
    if args.json:
        print(json.dumps(summary.as_json(), indent=2))
        print(summary.line(), file=sys.stderr)
    else:
        print(summary.line())
    if summary.stopped:
        print(f"error: {summary.stopped}", file=sys.stderr)
        return 3
    return 1 if summary.unverified else 0


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_steps(report) -> None:
    j = report.steps.as_json()
    if not j["n"]:
        return
    print(f"\nfirst error steps ({report.analyst} vs {report.against}): {j['n']} labelled transcripts, "
          f"a step named for {j['named']} ({j['coverage']:.1%})")
    print("measure\taccuracy (all labelled)\tprecision (step named)")
    for name in ("exact_step", "within_1_step", "within_3_steps", "agent", "within_1_step_or_agent"):
        cells = []
        for part in ("accuracy", "precision"):
            m = j[part].get(name)
            cells.append("" if m is None else "-" if m["rate"] is None else
                         f"{m['rate']:.3f} ({m['k']}/{m['n']}; 95% CI {m['ci'][0]:.3f} to {m['ci'][1]:.3f})")
        print(f"{name}\t" + "\t".join(cells))


def _print_agreement(report) -> None:
    if not report.n:
        print(f"No failures labelled by both {report.analyst} and {report.against} with a category.")
        _print_steps(report)
        return
    print(f"{report.analyst} vs {report.against}: n {report.n}, agreement {report.agreement:.3f}, "
          + (f"kappa {report.kappa:.3f} (95% bootstrap CI {report.kappa_ci[0]:.3f} to {report.kappa_ci[1]:.3f})"
             if report.kappa is not None and report.kappa_ci else
             f"kappa {report.kappa:.3f}" if report.kappa is not None else f"kappa undefined: {report.kappa_note}"))
    sp = report.specific
    print(f"specific labels (not Hard to Analyze or Other): {sp['specific']}, of which {sp['specific_right']} agree"
          + (f" (precision {sp['specific_precision']:.3f})" if sp["specific"] else "")
          + f"; abstained on {sp['abstained']} ({sp['abstention_rate']:.3f})")
    print("\ncategory\tprecision\trecall\tsupport\tpredicted")
    for cat, m in report.per_category.items():
        print(f"{cat}\t{_num(m['precision'])}\t{_num(m['recall'])}\t{m['support']}\t{m['predicted']}")
    print("\nconfusion (rows: reference, columns: analyst)")
    print("\t" + "\t".join(report.labels))
    for label, row in zip(report.labels, report.matrix):
        print(label + "\t" + "\t".join(map(str, row)))
    if report.disagreements:
        print("\ndisagreements (dataset:instance_id, model, analyst → reference)")
        for p in report.disagreements:
            print(f"{p.dataset}:{p.instance_id}\t{p.model}\t{p.analyst} → {p.reference}")
    _print_steps(report)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # names and texts printed show invisible characters as <U+XXXX> (core/names.py)
    with visible_output():
        return _run(args)


def _run(args) -> int:
    progress = sys.stderr.isatty() or bool(os.environ.get("FAULTLINE_PROGRESS"))
    try:
        if args.command == "discover":
            return _discover(args)
        if args.command == "agreement":
            import json

            from .agreement import agreement

            report = agreement(args.db, args.analyst, args.against, args.gold, args.models, args.datasets)
            if args.json:
                print(json.dumps(report.as_json(), indent=2))
            else:
                _print_agreement(report)
            print(report.line(), file=sys.stderr)
            return 0

        if args.command == "verify":
            return _verify(args, progress)
        if args.command == "labels":
            from .labels import DEFAULT_REVIEWER, is_table, load_labels

            tables = all(is_table(Path(p)) for p in args.paths)
            reviewer = args.reviewer or ("" if tables else DEFAULT_REVIEWER)
            print(load_labels(args.paths, args.db, reviewer).line())
            return 0
        if args.command == "review-sample":
            return _review_sample(args)
        if args.command == "calibrate":
            import json

            from .calibration import calibrate

            result = calibrate(args.db, args.analyst)
            print(json.dumps(result.as_json(), indent=2) if args.json else _calibration_text(result))
            print(result.line(), file=sys.stderr)
            return 0

        from .analyze import analyze, classify_titles

        if args.command == "analyze":
            summary = analyze(
                args.db, args.analyst or default_analyst(), classifier=args.classifier, taxonomy_file=args.taxonomy,
                sample_ratio=args.sample, models=args.models, datasets=args.datasets, settings=llm_settings(args),
                progress=progress, log=lambda msg: print(msg, file=sys.stderr),
            )
            print(summary.line())
            if summary.stopped:
                print(f"error: {summary.stopped}", file=sys.stderr)
                return 3
            return 1 if summary.unanalysed or summary.unclassified else 0

        titles = [" ".join(line.split()) for line in sys.stdin]
        titles = [t for t in titles if t]
        cats, summary = classify_titles(
            titles, args.classifier, db=args.db, taxonomy_file=args.taxonomy, settings=llm_settings(args),
            progress=progress, log=lambda msg: print(msg, file=sys.stderr),
        )
        for t in titles:
            if t in cats:
                print(f"{t}\t{cats[t]}")
        print(summary.classify_line(), file=sys.stderr)
        return 1 if summary.unclassified else 0
    except FaultlineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted; finished results are saved, re-run the same command to resume "
              "(with --resume when batches were submitted: they are collected, not sent again)", file=sys.stderr)
        return 130
