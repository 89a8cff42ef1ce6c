"""`python -m ingest PATH... [--db DB] [--format ...]` — load logs into the store."""

from __future__ import annotations

import argparse
import sys

from core.flags import assignments
from core.names import control_character, visible_output
from core.result import RESULT_FILE, CommandResult, write_result
from core.verdicts import PassConfig
from store.errors import FaultlineError

from .clusters import parse as parse_clusters
from .errors import IngestError
from .load import ingest_paths
from .options import ReadOptions, read_config
from .registry import FORMATS
from .report import write_skipped_list


class _NoPandas:
    """An import finder that refuses pandas (see `skip_pyarrow_pandas_probe`)."""

    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("pandas is not used by python -m ingest")
        return None


def skip_pyarrow_pandas_probe() -> None:
    """pyarrow imports pandas the first time it converts a Python list, only to ask whether the
    list is a pandas object: about 0.15 s of start-up and 0.1 s more at exit, a tenth of a
    283-run HELM ingest, for a library this command never uses (it hands pyarrow lists and
    reads no table through pandas). So its first conversion here runs while pandas cannot be
    imported, and pyarrow notes there is none. Only `python -m ingest` calls this (its process
    ends with the command), never the app: there an `import pandas` later still works, and
    pyarrow takes pandas up again the first time it is asked for a pandas conversion
    (tests/ingest/test_ingest_startup.py)."""
    if "pandas" in sys.modules:
        return
    import pyarrow as pa

    blocker = _NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        pa.array([], pa.string())
    finally:
        sys.meta_path.remove(blocker)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ingest",
        description="Load benchmark logs (HELM run/suite folders, lm-evaluation-harness samples, Inspect AI logs, Every Eval Ever files, OpenAI evals logs, promptfoo exports, agent transcripts from SWE-agent, OpenHands, tau-bench, ATIF and Who&When, JSONL/CSV predictions) into the Faultline store. `python -m ingest export --help`: write the store as Every Eval Ever files; `python -m ingest merge --help`: combine stores.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="a HELM suite/runs/run folder, an lm-eval output folder or samples file, an Inspect .eval/.json log, an Every Eval Ever .json/_samples.jsonl, an oaieval .jsonl, a promptfoo export .json, or a .jsonl/.csv file")
    p.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    p.add_argument("--demo", action="store_true",
                   help="build the demo store from data/demo (made-up DEMO logs) and analyse it offline; "
                        "writes --db if given, else data/demo.duckdb")
    p.add_argument("--migrate", metavar="DB",
                   help="upgrade the store DB written by an older Faultline to this version's schema, and exit")
    p.add_argument("--format", default="auto", choices=FORMATS, help="log format (default: recognise each path)")
    p.add_argument("--dataset", help="dataset name for every run read (custom files: default is the dataset column, else the file name)")
    p.add_argument("--model", help="model name for every run read (custom files without a model column)")
    p.add_argument(
        "--map", action="append", default=[], metavar="FIELD=COLUMN",
        help="custom files: read FIELD from COLUMN (fields: model, instance_id, input, output, reference, score, correct, "
             "dataset, domain, split; an agent's transcript: messages, OpenAI-style, with tool_calls and name; the "
             "evidence a judge's table holds: prompt, instructions, judge_explanation, finish_reason; cluster: the "
             "questions that are not independent)",
    )
    p.add_argument(
        "--cluster", action="append", default=[], metavar="DATASET=FIELD",
        help="the sample field naming the questions that are not independent (several on one passage, one "
             "repository): an lm-eval sample's doc field, an Inspect sample's metadata field (a dotted path "
             "reads nested fields; DATASET * for every dataset); intervals and paired tests are then "
             "cluster-robust. Custom tables: --map cluster=COLUMN",
    )
    p.add_argument(
        "--pass-threshold", action="append", default=[], metavar="[DATASET=]X",
        help="pass when the main score reaches X (≤ X for lower-is-better metrics); default 0.7 of the metric's maximum",
    )
    p.add_argument(
        "--scale", action="append", default=[], metavar="[DATASET=]LOW:HIGH",
        help="the lowest and highest score the main metric can take on DATASET (e.g. ratings=1:3): "
             "its threshold is then 0.7 of the way up; needed when neither the log nor the registry says",
    )
    p.add_argument("--main-metric", action="append", default=[], metavar="[DATASET=]NAME",
                   help="the metric that decides pass/fail: a HELM or lm-eval metric, an Inspect scorer "
                        "(SCORER/FIELD for a field of a scorer's dict values)")
    p.add_argument("--config", metavar="FILE", help="YAML/JSON: datasets: {NAME: {main_metric: ..., pass_threshold: ..., scale: [LOW, HIGH]}}, aliases: {NAME: CANONICAL_NAME}")
    p.add_argument(
        "--only-under", action="append", default=[], metavar="DIR",
        help="read only files and folders whose resolved path (symbolic links followed) lies under DIR "
             "(repeatable); others are refused or skipped and named. The app passes its data roots",
    )
    p.add_argument(
        "--verdicts", action="append", default=[], metavar="FILE",
        help="agent logs that carry no verdict (SWE-agent trajectories, OpenHands output without a SWE-bench report, "
             "ATIF without Harbor's result.json): the harness's verdicts from FILE, a SWE-bench report (resolved_ids, "
             "unresolved_ids, ...), per-instance report.json, or a list of resolved instance ids (repeatable)",
    )
    p.add_argument(
        "--strict", action="store_true",
        help="exit 2 when any run's recomputed rate differs from the harness's own headline, or is judged on "
             "another metric than the headline (the runs are still stored)",
    )
    return p


def build_export_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ingest export",
        description="Write the store's outcomes as Every Eval Ever 0.3.0 files (an aggregate .json and a _samples.jsonl per run).",
    )
    p.add_argument("--format", default="eee", choices=("eee",), help="output format (default: eee)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into (files go to DIR/data/<dataset>/<developer>/<model>/)")
    p.add_argument("--models", nargs="+", default=[], metavar="M", help="only these models (default: every model)")
    p.add_argument("--datasets", nargs="+", default=[], metavar="D", help="only these datasets (default: every dataset)")
    p.add_argument("--db", help="database file (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    return p


def build_merge_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ingest merge",
        description="Combine Faultline stores (e.g. shards ingested on several machines) into one: runs with their "
                    "instances and predictions, analyses, classifications, taxonomies, reviews, cached LLM answers and "
                    "LLM call records, all in one transaction. A run in two stores is one run; with different content "
                    "the merge is refused, naming both stores.",
    )
    p.add_argument("stores", nargs="+", metavar="STORE", help="a Faultline store (.duckdb file) to bring in")
    p.add_argument("--db", help="the store to merge into, created when missing (default: $FAULTLINE_DB, else data/faultline.duckdb)")
    return p


def merge_main(argv: list[str]) -> int:
    from store.merge import merge_stores

    args = build_merge_parser().parse_args(argv)
    try:
        summary = merge_stores(args.stores, db=args.db)
    except KeyboardInterrupt:
        print("interrupted: nothing from this merge was written", file=sys.stderr)
        return 130
    print(summary.line())
    return 0


def export_main(argv: list[str]) -> int:
    from export import export_eee

    args = build_export_parser().parse_args(argv)
    summary = export_eee(args.out, db=args.db, models=args.models, datasets=args.datasets)
    print(summary.line())
    return 0


def main(argv: list[str] | None = None) -> int:
    # names and texts printed show invisible characters as <U+XXXX> (core/names.py)
    with visible_output():
        result = _outcome(argv)
        try:
            write_result(result)
        except OSError as exc:
            print(f"warning: cannot write the result file ${RESULT_FILE}: {exc.strerror or exc}", file=sys.stderr)
    return result.exit_code


def _outcome(argv: list[str] | None) -> CommandResult:
    """Run the command: an error meant for the user is its message on stderr and its exit code,
    never a traceback."""
    try:
        return CommandResult(_main(argv))
    except FaultlineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return CommandResult.failed(exc)


def _check_name_flags(args) -> None:
    """--model and --dataset name every run read: refused as a log's names are (core/names.py)."""
    for flag, value in (("--model", args.model), ("--dataset", args.dataset)):
        why = control_character(value) if value is not None else None
        if why:
            raise IngestError(f"{flag} {value!r} {why}")


def _main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["export"]:
        return export_main(argv[1:])
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.migrate is not None and (args.paths or args.demo):
        parser.error("--migrate upgrades a store on its own: give no PATH or --demo with it")
    if args.demo and args.paths:
        parser.error("--demo builds the demo store on its own: give no PATH with it")
    if not args.demo and not args.paths and args.migrate is None:
        parser.error("give at least one PATH (or --demo)")
    try:
        if args.migrate is not None:
            from store import upgrade_store

            applied = upgrade_store(args.migrate)
            print(f"{args.migrate}: " + (f"applied {len(applied)} migration(s): {', '.join(applied)}"
                                         if applied else "already up to date"))
            return 0
        if args.demo:
            from demo import build_demo

            summary = build_demo(args.db)
            print(summary.line() + "; analysed offline. DEMO data: made-up models and answers. "
                  f"View it with: FAULTLINE_DB={summary.db} streamlit run app.py")
            return 0
        _check_name_flags(args)
        options = ReadOptions(
            pass_config=PassConfig.build(args.pass_threshold, args.main_metric, read_config(args.config), args.scale),
            dataset=args.dataset,
            model=args.model,
            column_map=assignments(args.map, "--map", "FIELD=COLUMN", example="output=answer"),
            cluster_fields=parse_clusters(args.cluster),
            only_under=tuple(args.only_under),
            verdicts=tuple(args.verdicts),
        )
        summary = ingest_paths(args.paths, db=args.db, fmt=args.format, options=options, progress=True)
    except KeyboardInterrupt:
        print("interrupted: nothing from this command was written", file=sys.stderr)
        return 130
    try:
        listed = write_skipped_list(summary.skipped, summary.db)
    except OSError as exc:
        print(f"warning: cannot write the list of skipped files: {exc.strerror or exc}", file=sys.stderr)
        listed = None
    for line in summary.details(listed):
        print(line)
    print(summary.line())
    if args.strict and summary.differing:
        raise FaultlineError(f"--strict: {len(summary.differing)} run(s) differ from the harness's own headline (listed above)")
    return 0
