"""What the agent-log readers share: building a run from its predictions and transcript, the
verdicts a log does not carry (a SWE-bench report given with --verdicts), and logs that name no
model or dataset (skipped and named in a folder, refused when named directly, with the flag).

Verdicts stay the harness's own: a reader sets `is_correct` only from what the log (or the
report the user gives) says, and a prediction without one is stored unscored, its run saying why.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from core.names import canonical_dataset
from core.records import InstanceRecord, ParsedRun, PredictionRecord, RunRecord, Skipped

from ..errors import MALFORMED, IngestError, malformed
from ..jsonio import load_json, parse_json, read_bytes
from ..options import ReadOptions
from ..transcript import Transcript

T = TypeVar("T")
R = TypeVar("R")


class NeedsFlag(IngestError):
    """A log that does not name what a run needs (its model, its dataset): skipped and named in a
    folder, refused when named directly."""

    def __init__(self, where: object, reason: str):
        super().__init__(f"{where}: {reason}")
        self.reason = reason


def each_or_skip(path: Path, items: Iterable[T], read_one: Callable[[T], R], what: str,
                 where: Callable[[T], object] = lambda item: item) -> Iterator[R | Skipped]:
    """`read_one` of each item (a log, a folder of logs) in turn: an item that needs a flag is
    skipped and named (refused when `path` is the one file asked for); a malformed one stops the
    load, naming it (`where`) and `what` it is."""
    for item in items:
        try:
            result = read_one(item)
        except NeedsFlag as exc:
            if path.is_file():
                raise
            yield Skipped(path=str(where(item)), reason=exc.reason)
            continue
        except MALFORMED as exc:
            raise malformed(where(item), what, exc) from None
        yield result


def runs_by_folder(path: Path, groups: dict[Path, list[Path]], read_one: Callable[[Path, list[Path]], ParsedRun],
                   what: str) -> Iterator[ParsedRun | Skipped]:
    """One run per group of logs (`groups`: folder → its logs), as `each_or_skip` reads them."""
    return each_or_skip(path, groups.items(), lambda group: read_one(*group), what, where=lambda group: group[0])


def require(value: Any, where: object, what: str, flag: str) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise NeedsFlag(where, f"{what}: pass {flag}")


def binary_verdict_fields(metric: str, source: str, rule: str) -> dict:
    """The run fields of a run judged by a verdict the log (or its report) gives per prediction."""
    return {"main_metric": metric, "main_metric_source": source, "metric_min": 0.0, "metric_max": 1.0,
            "lower_is_better": False, "scale_source": "binary", "verdict_rule": rule}


def agent_run(*, fmt: str, key: str, path: Path, content_hash: str, model: str, dataset_raw: str, options: ReadOptions,
              instances: list[InstanceRecord], predictions: list[PredictionRecord], transcript: Transcript,
              verdict: dict, settings: dict, domain: str | None = None, notes: list[str] | None = None,
              run_name: str | None = None, status: str = "complete", instructions: str | None = None,
              harness: dict | None = None) -> ParsedRun:
    """A run of an agent log. `key` tells it apart from other runs of the same format (its file,
    its folder); `verdict` holds the run fields saying how it is judged (binary_verdict_fields)."""
    dataset = options.dataset or canonical_dataset(dataset_raw, options.pass_config.aliases)
    notes = list(notes or [])
    unscored = sum(1 for p in predictions if p.is_correct is None and not p.infra_error)
    if unscored and verdict.get("verdict_rule") is None:
        verdict = {**verdict, "verdict_rule": "none: the log carries no verdict"}
    run = RunRecord(
        run_id=hashlib.sha1(f"{fmt}|{key}|{model}|{dataset}|{domain}".encode()).hexdigest()[:16],
        source_format=fmt,
        source_path=str(path.resolve()),
        content_hash=content_hash,
        run_name=run_name or ":".join(x for x in (path.name, model, dataset, domain) if x),
        model=model,
        dataset=dataset,
        dataset_raw=dataset_raw,
        domain=domain,
        settings={k: v for k, v in {"harness": fmt, **settings}.items() if v is not None},
        status=status,
        instructions=instructions,
        **verdict,
        **(harness or {}),
    )
    if transcript.n_cut:
        notes.append(f"{path}: {transcript.n_cut:,} step text(s) longer than {transcript.cap:,} characters stored cut "
                     "(transcript_steps.text_chars keeps each full length)")
    return ParsedRun(run=run, instances=instances, predictions=predictions, steps=transcript if len(transcript) else None,
                     notes=notes)


def check_unique(seen: dict, key: tuple, where: object, first: object) -> None:
    if key in seen:
        raise IngestError(f"{where}: instance {key[0]!r} trial {key[1]} already read from {seen[key]}")
    seen[key] = first


# ---------------------------------------------------------------- verdicts from a report (--verdicts)

REPORT_LISTS = {
    # SWE-bench's run report (harness/reporting.py make_run_report)
    "resolved_ids": True, "unresolved_ids": False, "empty_patch_ids": False, "error_ids": False,
    # older SWE-bench reports and leaderboard results.json
    "resolved": True, "no_generation": False, "no_apply": False, "test_errored": False, "test_timeout": False,
}
REPORT_NOTES = {
    "empty_patch_ids": "the agent submitted an empty patch (SWE-bench counts it as not resolved)",
    "error_ids": "the SWE-bench evaluation errored on this instance; SWE-bench counts it as not resolved",
    "no_generation": "no patch was generated (SWE-bench counts it as not resolved)",
    "no_apply": "the patch did not apply (SWE-bench counts it as not resolved)",
    "test_errored": "the tests errored (SWE-bench counts it as not resolved)",
    "test_timeout": "the tests timed out (SWE-bench counts it as not resolved)",
}


class Verdicts:
    """Per-instance verdicts from the files given with --verdicts: a SWE-bench run report
    (`resolved_ids`, `unresolved_ids`, `empty_patch_ids`, `error_ids`), an older SWE-bench report
    or leaderboard `results.json` (`resolved`, `no_generation`, `no_apply`, ...), per-instance
    `report.json` files (`{instance_id: {"resolved": bool}}`), or a list of resolved instance ids
    (a JSON array, or text with one id per line), in which case every other instance is read as
    not resolved."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.by_id: dict[str, tuple[bool, str | None]] = {}
        self.complete_list: set[str] | None = None  # a bare resolved list: what is not in it failed
        self.sources = [str(p) for p in paths]
        for raw in self.sources:
            self._read(Path(raw))

    def __bool__(self) -> bool:
        return bool(self.sources)

    def _read(self, path: Path) -> None:
        if not path.is_file():
            raise IngestError(f"--verdicts {path}: no such file")
        raw = read_bytes(path)
        text = raw.decode("utf-8", errors="replace").strip()
        if text[:1] in ("{", "["):
            value = parse_json(raw, f"--verdicts {path}")
        else:
            value = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
        if isinstance(value, list):
            if not all(isinstance(v, (str, int)) for v in value):
                raise IngestError(f"--verdicts {path}: a list must hold instance ids (text)")
            self.complete_list = (self.complete_list or set()) | {str(v) for v in value}
            return
        if not isinstance(value, dict):
            raise IngestError(f"--verdicts {path}: expected a SWE-bench report (an object), found {type(value).__name__}")
        lists = [k for k in value if k in REPORT_LISTS and isinstance(value[k], list)]
        if lists:
            for name in lists:
                for iid in value[name]:
                    self.by_id.setdefault(str(iid), (REPORT_LISTS[name], REPORT_NOTES.get(name)))
            return
        per_instance = {k: v for k, v in value.items() if isinstance(v, dict) and isinstance(v.get("resolved"), bool)}
        if not per_instance:
            raise IngestError(
                f"--verdicts {path}: not a SWE-bench report: no resolved_ids/unresolved_ids lists and no "
                f"{{instance_id: {{\"resolved\": ...}}}} entries (keys: {', '.join(sorted(value)[:8])})")
        for iid, entry in per_instance.items():
            self.by_id[str(iid)] = (entry["resolved"], None)

    def get(self, instance_id: str) -> tuple[bool | None, str | None]:
        """(resolved, note), or (None, None) when the files do not judge this instance."""
        if instance_id in self.by_id:
            return self.by_id[instance_id]
        if self.complete_list is not None:
            return instance_id in self.complete_list, None
        return None, None

    def describe(self) -> str:
        return f"SWE-bench resolved, from {', '.join(self.sources)}"


def python_value(value: Any) -> Any:
    """A value some harnesses write as a Python repr inside JSON (OpenHands' test_result): read
    as a literal (never evaluated), else left as it is."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return value
    return value


def json_file(path: Path, hasher) -> Any:
    return load_json(path, hasher)
