"""The one table of readers: a format name, how to recognise its files, how to read them."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, Iterator

from . import files
from .readers import atif, custom, eee, helm, inspect_log, lmeval, oaieval, openhands, promptfoo, swe_agent, tau_bench, who_when
from .errors import IngestError
from .jsonio import parse_json, try_parse
from .options import ReadOptions
from .records import ParsedRun
from .walk import helm_runs_below


@dataclass(frozen=True)
class Reader:
    name: str
    looks_like: Callable[[Path], bool]
    read: Callable[[Path, ReadOptions], Iterator[ParsedRun]]
    count_runs: Callable[[Path], int]
    # What it recognises, for the message when nothing does
    expects: str = ""
    # Parts of an input that can be read independently (in parallel); None: read as a whole.
    parts: Callable[[Path], list[Path]] | None = None


# Order matters for `--format auto`: the first reader that recognises a path reads it.
# Content sniffers come before the generic jsonl/csv readers, which take any file of their suffix.
READERS: tuple[Reader, ...] = (
    Reader("helm", helm.looks_like, helm.read, helm.count_runs,
           "a folder holding HELM runs (run_spec.json)", helm_runs_below),
    Reader("lm-eval", lmeval.looks_like, lmeval.read, lmeval.count_runs,
           "samples_<task>_<datetime>.jsonl whose rows have doc_id"),
    Reader("inspect", inspect_log.looks_like, inspect_log.read, inspect_log.count_runs,
           "an .eval archive or a .json EvalLog with eval and status keys"),
    Reader("eee", eee.looks_like, eee.read, eee.count_runs,
           "JSON with string schema_version and evaluation_id: an aggregate (evaluation_results) or instance lines (sample_id)"),
    Reader("openai-evals", oaieval.looks_like, oaieval.read, oaieval.count_runs,
           'JSONL whose first line is {"spec": {"eval_name": ...}}'),
    Reader("promptfoo", promptfoo.looks_like, promptfoo.read, promptfoo.count_runs,
           "a JSON object starting with evalId and holding results"),
    Reader("swe-agent", swe_agent.looks_like, swe_agent.read, swe_agent.count_runs,
           "SWE-agent trajectories (.traj)"),
    Reader("openhands", openhands.looks_like, openhands.read, openhands.count_runs,
           "OpenHands output .jsonl whose lines have instance_id and history"),
    Reader("tau-bench", tau_bench.looks_like, tau_bench.read, tau_bench.count_runs,
           "tau-bench results: a JSON array of {task_id, reward, traj, trial}"),
    Reader("atif", atif.looks_like, atif.read, atif.count_runs,
           'an ATIF trajectory (.json with schema_version "ATIF-v…" and steps)'),
    Reader("who-when", who_when.looks_like, who_when.read, who_when.count_runs,
           "Who&When logs: .json with history and mistake_agent"),
    Reader("jsonl", partial(custom.looks_like, kind="jsonl"), partial(custom.read, kind="jsonl"), custom.count_runs,
           "a .jsonl/.ndjson file of predictions, one object per line"),
    Reader("csv", partial(custom.looks_like, kind="csv"), partial(custom.read, kind="csv"), custom.count_runs,
           "a .csv/.tsv file of predictions with a header row"),
    Reader("parquet", partial(custom.looks_like, kind="parquet"), partial(custom.read, kind="parquet"), custom.count_runs,
           "a .parquet table of predictions"),
    Reader("xlsx", partial(custom.looks_like, kind="xlsx"), partial(custom.read, kind="xlsx"), custom.count_runs,
           "an Excel .xlsx workbook of predictions (its first sheet, with a header row)"),
)
FORMATS = ("auto", *(r.name for r in READERS))


def choose(path: Path, fmt: str = "auto") -> list[Reader]:
    """The readers for a path: the one `fmt` names, else every reader that recognises it (a
    folder may hold HELM runs, lm-eval output and Inspect logs side by side)."""
    files.check_input(path)
    if fmt != "auto":
        for reader in READERS:
            if reader.name == fmt:
                return [reader]
        raise IngestError(f"--format {fmt}: unknown format; choose from {', '.join(FORMATS)}")
    found = [reader for reader in READERS if reader.looks_like(path)]
    if path.is_file():
        found = found[:1]
        if found and found[0].name == "jsonl" and (foreign := _foreign_jsonl(path)):
            raise IngestError(f"{path}: {foreign}")
    if found:
        return found
    tried = "; ".join(f"{r.name}: {r.expects}" for r in READERS)
    raise IngestError(
        f"{path}: not a log format Faultline recognises: it is {_observed(path)}. "
        f"Tried {tried}. Pass --format to force one."
    )


def _first_row(path: Path) -> dict | None:
    head = files.head(path, 1 << 20)
    row = try_parse(head.split(b"\n", 1)[0]) if head else None
    return row if isinstance(row, dict) else None


_SPECLESS_OAIEVAL = "OpenAI evals events without the spec line oaieval writes first; the log is cut or was assembled from another log"
# Known formats a JSONL file can be in that the custom reader would misread: name them, not --map.
_FOREIGN_JSONL = (
    ({"doc_id", "resps"}, "lm-evaluation-harness samples whose file name is not "
     "samples_<task>_<datetime>.jsonl; keep lm-eval's name (the model comes from the results file beside it)"),
    (oaieval.EVENT_KEYS, _SPECLESS_OAIEVAL),
    ({"final_report"}, _SPECLESS_OAIEVAL),
    ({"provider", "testIdx", "gradingResult"}, "promptfoo results, one per line; write the export JSON "
     "instead (promptfoo export, or promptfoo eval -o results.json)"),
    ({"evaluation_id", "sample_id", "evaluation"}, "Every Eval Ever instance records without a string "
     "schema_version/evaluation_id at the start of each line"),
    ({"messages"}, "a chat dataset (messages), not model predictions"),
)


def _foreign_jsonl(path: Path) -> str | None:
    row = _first_row(path)
    if row is None:
        return None
    for keys, what in _FOREIGN_JSONL:
        if keys <= set(row) and not ({"instance_id", "output"} <= set(row)):
            return f"looks like {what} (first line keys: {', '.join(sorted(row))})"
    return None


SMALL_JSON_BYTES = 16 * 1024 * 1024


def _observed(path: Path) -> str:
    """What the file is, in the terms the readers' expectations use."""
    if path.is_dir():
        return "a folder with no log any reader recognises below it"
    kind = f"a {path.suffix or 'suffix-less'}"
    row = _first_row(path)
    if row is not None:
        return f"{kind} file whose first line is a JSON object with keys {', '.join(sorted(row)[:12])}"
    raw = files.head(path, SMALL_JSON_BYTES + 1)
    if raw is None:
        return "a file that cannot be read"
    start = raw[:64].decode("utf-8", errors="replace").lstrip()
    if start[:1] in ("{", "[") and len(raw) <= SMALL_JSON_BYTES:
        try:
            value = parse_json(raw, path)
        except IngestError as exc:
            # a JSON file with a real problem says which, not merely "not JSON"
            return f"{kind} file that starts like JSON but does not parse ({exc.message.removeprefix(str(path)).lstrip(':0123456789 ')})"
        return f"{kind} JSON {_shape(value)}"
    return f"{kind} file that is not JSON" + (f" (starts {start[:20]!r})" if start else " (empty)")


def _shape(value) -> str:
    """What a parsed JSON document holds, for telling the user why no reader took it."""
    if isinstance(value, dict):
        return f"object with keys {', '.join(sorted(value)[:12])}" if value else "object with no keys"
    if isinstance(value, list):
        kinds = sorted({type(v).__name__ for v in value[:1000]})
        what = {"dict": "objects", "list": "arrays", "str": "strings"}
        inner = " and ".join(what.get(k, k + "s") for k in kinds)
        first = f" (the first with keys {', '.join(sorted(value[0])[:12])})" if value and isinstance(value[0], dict) else ""
        return f"array of {len(value):,} {inner}{first}" if value else "array with no items"
    return f"document holding a single {type(value).__name__}"


def by_name(name: str) -> Reader:
    return next(r for r in READERS if r.name == name)
