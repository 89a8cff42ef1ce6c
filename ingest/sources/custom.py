"""The user's own predictions: one row per prediction in JSONL, CSV, Parquet or Excel (.xlsx,
its first sheet), columns mapped by the same flags whatever the file type."""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
import zipfile
from functools import partial
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.errors import Ask, SettingsNeeded
from core.names import canonical_dataset, check_name, question_hash
from core.numbers import number_or_none, shown
from core.records import (
    InstanceRecord,
    JudgeNote,
    ParsedRun,
    PredictionRecord,
    Reference,
    RunRecord,
)
from core.verdicts import is_finite, make_rule

from .. import files
from ..errors import IngestError
from ..evidence import common
from ..jsonio import line_too_long, read_jsonl
from ..limits import ArchiveReader, Limits, human
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript
from .chat import add_messages, said

# how a run whose file has a correct column is judged
CORRECT_COLUMN = {"lower_is_better": False, "scale_source": "binary", "verdict_rule": "the file's correct column (true passes, false fails)"}
FIELDS = ("model", "instance_id", "input", "output", "reference", "score", "correct", "dataset", "domain", "split",
          "messages", "prompt", "instructions", "judge_explanation", "finish_reason", "cluster")
REQUIRED = ("instance_id", "output")
# what tables commonly call the instance id: taken when there is no instance_id column, and said
ID_COLUMNS = ("id", "sample_id", "question_id")
SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "csv", ".parquet": "parquet", ".xlsx": "xlsx"}

_TRUE = {"true", "1", "yes", "y", "c", "correct", "pass", "passed"}
_FALSE = {"false", "0", "no", "n", "i", "incorrect", "fail", "failed"}


class CustomRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str | None = None
    instance_id: str
    input: str | None = None
    output: str | None = None
    reference: list[str] | None = None
    score: float | None = None
    correct: bool | None = None
    dataset: str | None = None
    domain: str | None = None
    split: str | None = None
    # an agent's transcript: OpenAI-style messages (JSON text in a CSV cell), `name` the agent
    messages: list | None = None
    # the evidence a judge's table holds beside the verdict
    prompt: str | None = None
    instructions: str | None = None
    judge_explanation: str | None = None
    finish_reason: str | None = None
    # questions that are not independent (one passage, one repository) share a cluster
    cluster: str | None = None

    @field_validator("cluster", mode="before")
    @classmethod
    def _cluster(cls, v: Any) -> Any:
        if v is None or v == "":
            return None
        if hasattr(v, "item"):  # a numpy integer from a Parquet column
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            raise ValueError(f"expected a text or integer cluster, found {type(v).__name__}")
        return str(v)

    @field_validator("messages", mode="before")
    @classmethod
    def _messages(cls, v: Any) -> Any:
        if v is None or v == "":
            return None
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                raise ValueError("is not a JSON list of messages") from None
        if hasattr(v, "tolist"):  # a Parquet list column read as an array
            v = v.tolist()
        if not isinstance(v, list):
            raise ValueError(f"expected a list of messages, found {type(v).__name__}")
        return v

    @field_validator("instance_id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        if isinstance(v, bool) or v is None or v == "":
            raise ValueError("must be a non-empty string or integer")
        if isinstance(v, str) and "\0" in v:
            raise ValueError(f"{v!r} holds a NUL byte")
        return str(v) if isinstance(v, int) else v

    @field_validator("model", "dataset", "domain", "split")
    @classmethod
    def _name(cls, v: Any) -> Any:
        return check_name(v)

    @field_validator("reference", mode="before")
    @classmethod
    def _refs(cls, v: Any) -> Any:
        if v is None or v == "":
            return None
        return [v] if isinstance(v, str) else v

    @field_validator("score", mode="before")
    @classmethod
    def _score(cls, v: Any) -> Any:
        if v is None or v == "":
            return None
        if isinstance(v, bool):
            return float(v)
        if isinstance(v, str):
            number = number_or_none(v)  # ASCII digits only: float() reads "١" and "1_0"
            if number is None:
                raise ValueError(f"{shown(v)} is not a number")
            return number
        return v

    @field_validator("correct", mode="before")
    @classmethod
    def _correct(cls, v: Any) -> Any:
        if v is None or v == "":
            return None
        if isinstance(v, bool):
            return v
        if isinstance(v, (int, float)) and v in (0, 1):
            return bool(v)
        if isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
            return v.strip().lower() in _TRUE
        raise ValueError(f"{v!r} is not true/false")

    @field_validator("model", "dataset", "domain", "split", "input", "output", "prompt", "instructions",
                     "judge_explanation", "finish_reason", mode="before")
    @classmethod
    def _strings(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return str(v)
        raise ValueError(f"expected text, found {type(v).__name__}")


def predictions_row(columns: set[str]) -> bool:
    """Whether a row with these columns holds predictions: an id and an output, which for an
    agent's transcript (a `messages` column) is its last assistant message."""
    return "instance_id" in columns and bool({"output", "messages"} & columns)


def looks_like(path: Path, kind: str) -> bool:
    """A .jsonl/.ndjson (kind "jsonl"), .csv/.tsv ("csv"), .parquet ("parquet") or .xlsx ("xlsx") file."""
    return path.is_file() and SUFFIXES.get(path.suffix.lower()) == kind


def count_runs(path: Path) -> int:
    return 1


def _rows(path: Path, kind: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind in ("parquet", "xlsx"):
        # their readers open the file themselves: a regular file within the caps and roots first
        os.close(files.open_regular(path, limits))
        return _parquet_rows(path) if kind == "parquet" else _xlsx_rows(path, limits)
    return _text_rows(path, kind, limits)


def _parquet_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row number, row) of a Parquet table, a batch at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
        row = 0
        for batch in table.iter_batches(batch_size=4096):
            for values in batch.to_pylist():
                row += 1
                yield row, values
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except OSError as exc:
        raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (pa.ArrowException, ValueError) as exc:
        raise IngestError(f"{path}: not a readable Parquet file ({exc})") from None


class Uncomputed:
    """A formula cell of a workbook that holds no value: the program that wrote the file never
    computed it (Excel and LibreOffice store each formula's last value beside it; openpyxl,
    pandas and most generators do not). Read as a column's value, it is refused (`read`)."""

    def __init__(self, sheet: str, cell: str, formula: str) -> None:
        self.sheet, self.cell, self.formula = sheet, cell, formula

    def __str__(self) -> str:  # what the run's content hash sees
        return f"{self.formula} (not computed)"

    def problem(self, path: Path, column: str | None) -> str:
        """The refusal; `column` None: the cell is in the header row."""
        formula = self.formula if len(self.formula) <= 60 else self.formula[:60] + "…"
        where = "the header" if column is None else f"column {column!r}"
        return (f"{path}: sheet {self.sheet!r}, cell {self.cell} ({where}): a formula ({formula}) whose "
                "value was never computed — the file holds no value for it (it was written by a program, not "
                "saved by a spreadsheet); open and save it in Excel or LibreOffice, or export it as CSV")


def _xlsx_rows(path: Path, limits: Limits) -> Iterator[tuple[int, dict[str, Any]]]:
    """(sheet row number, row) of an Excel workbook's first sheet; the first row is the header.

    A formula cell reads as the value the spreadsheet last computed for it (stored in the file
    beside the formula); one with no such value is an `Uncomputed`, never an empty cell: the
    workbook is read twice in step, once for the values and once for which cells are formulas."""
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        with zipfile.ZipFile(path) as archive:  # a workbook is a zip: refuse a bomb before opening it
            ArchiveReader(archive, path, limits).check_declared(archive.namelist())
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
        formulas = openpyxl.load_workbook(path, read_only=True, data_only=False)
    except FileNotFoundError:
        raise IngestError(f"{path}: file not found") from None
    except (zipfile.BadZipFile, InvalidFileException, KeyError, OSError, ValueError) as exc:
        raise IngestError(f"{path}: not a readable .xlsx workbook ({exc})") from None
    try:
        sheet = book.worksheets[0]
        title = sheet.title

        def rows() -> Iterator[tuple[Any, ...]]:
            for values, cells in zip(sheet.iter_rows(values_only=True), formulas.worksheets[0].iter_rows()):
                yield tuple(
                    Uncomputed(title, c.coordinate, str(c.value))
                    if v is None and getattr(c, "data_type", None) == "f" else v
                    for v, c in itertools.zip_longest(values, cells))

        read = rows()
        header = next(read, None)
        if not header or all(h is None for h in header):
            raise IngestError(f"{path}: the first sheet ({title}) is empty, expected a header row")
        for h in header:
            if isinstance(h, Uncomputed):
                raise IngestError(h.problem(path, None))
        names = [str(h).strip() if h is not None else None for h in header]
        for lineno, values in enumerate(read, start=2):
            if all(v is None for v in values):
                continue
            named = dict(zip(names, values))
            if None in named and named[None] is not None:
                raise IngestError(f"{path}:{lineno}: a value in a column without a header")
            named.pop(None, None)
            yield lineno, {k: _cell(v) for k, v in named.items()}
    finally:
        book.close()
        formulas.close()


def _cell(value: Any) -> Any:
    # Excel stores ids typed as numbers as floats (12 → 12.0): an id or a label keeps its integer text
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if value is None or isinstance(value, (str, int, float, bool, Uncomputed)):
        return value
    return str(value)  # dates and times, as Excel shows them


def _bounded_text_lines(path: Path, handle, cap: int) -> Iterator[str]:
    """The lines of a text stream for csv, each refused over `cap` characters (at most a line's
    bytes) before more of it is held: csv reads a line whole before its field limit applies."""
    lineno = 0
    while line := handle.readline(cap + 1):
        lineno += 1
        if len(line) - line.endswith(("\n", "\r")) > cap:
            raise line_too_long(path, lineno, cap)
        yield line


def _text_rows(path: Path, kind: str, limits: Limits) -> Iterator[tuple[int, dict[str, Any]]]:
    if kind == "jsonl":
        # a line at a time, each bounded (ingest/jsonio.py); Excel's byte-order mark is skipped
        for lineno, row in read_jsonl(path, None, limits, bom=True, tell_cut=False):
            if not isinstance(row, dict):
                raise IngestError(f"{path}:{lineno}: expected a JSON object, found {type(row).__name__}")
            yield lineno, row
        return
    # utf-8-sig: Excel starts its UTF-8 CSVs with a byte-order mark, which is not part of the header
    handle = files.open_text(path, limits, encoding="utf-8-sig", newline="")
    # a field may be as long as one text may be (csv's own default stops at 131,072 characters)
    csv.field_size_limit(limits.text_bytes)
    lineno = 0
    with handle:
        try:
            dialect = "excel-tab" if path.suffix.lower() == ".tsv" else "excel"
            # strict: a quote left open at the end of the file is an error, not a long last field
            reader = csv.DictReader(_bounded_text_lines(path, handle, limits.line_bytes), dialect=dialect,
                                    strict=True)
            if not reader.fieldnames:
                raise IngestError(f"{path}: empty file, expected a header row")
            for row in reader:
                lineno = reader.line_num
                if None in row:
                    raise IngestError(f"{path}:{lineno}: more fields than the header has")
                if None in row.values():
                    raise IngestError(
                        f"{path}:{lineno}: {sum(v is None for v in row.values())} field(s) fewer than the header has "
                        "(a row cut short?)"
                    )
                yield lineno, row
        except OSError as exc:
            raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise IngestError(f"{path}: not UTF-8 text ({exc.reason})") from None
        except csv.Error as exc:
            if str(exc).startswith("field larger than field limit"):
                raise IngestError(
                    f"{path}:{reader.line_num + 1}: a field longer than {human(limits.text_bytes)}, the limit on one "
                    "text (raise FAULTLINE_MAX_TEXT_BYTES to read it)") from None
            if str(exc) == "unexpected end of data":
                raise IngestError(f"{path}:{lineno + 1}: a quoted field is never closed (the file is cut short?)") from None
            raise IngestError(f"{path}:{reader.line_num}: malformed CSV: {exc}") from None


def read(path: Path, options: ReadOptions, kind: str) -> Iterator[ParsedRun]:
    """Rows of a JSONL (kind "jsonl") or CSV/TSV (kind "csv") file, whatever its suffix."""
    mapping = {f: options.column_map.get(f, f) for f in FIELDS}
    unknown = set(options.column_map) - set(FIELDS)
    if unknown:
        raise IngestError(f"--map: unknown field(s) {', '.join(sorted(unknown))}; fields are {', '.join(FIELDS)}")
    hasher = hashlib.sha256()
    # one run per (model, dataset, domain): the store keeps domain on the run
    groups: dict[tuple[str, str, str | None], list[tuple[int, CustomRow]]] = {}
    columns_seen: set[str] | None = None
    notes: list[str] = []  # said once, with the file's first run
    for lineno, raw in _rows(path, kind, options.limits):
        hasher.update(json.dumps(raw, sort_keys=True, default=str).encode())
        if columns_seen is None:
            columns_seen = set(raw)
            taken = id_column(columns_seen, mapping, options.column_map)
            if taken is not None:
                mapping["instance_id"] = taken
                notes.append(f"{path}: instance id from column `{taken}`")
            # an agent's output is its last assistant message: a messages column stands for output
            missing = [f for f in REQUIRED if mapping[f] not in columns_seen
                       and not (f == "output" and mapping["messages"] in columns_seen)]
            if not options.model and mapping["model"] not in columns_seen:
                missing.append("model")
            if mapping["score"] not in columns_seen and mapping["correct"] not in columns_seen:
                missing.append("score or correct")
            if missing:
                # the app offers a column for each field asked (ui/setup.py); an Ask's `dataset`
                # holds the field, so that its `typed` reads as the flag does: --map score=COLUMN
                raise SettingsNeeded(
                    f"{path}: no column for {', '.join(missing)} (columns: {', '.join(sorted(columns_seen))}); "
                    "map one with --map FIELD=COLUMN" + (" or pass --model NAME" if "model" in missing else ""),
                    [Ask("--map", field, "COLUMN") for m in missing for field in m.split(" or ")],
                )
        values = {f: raw.get(col) for f, col in mapping.items() if col in raw}
        for field, value in values.items():
            if isinstance(value, Uncomputed):  # a formula with no value: never read as an empty cell
                raise IngestError(value.problem(path, mapping[field]))
        try:
            row = CustomRow(**values)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = err["loc"][0] if err["loc"] else "?"
            raise IngestError(
                f"{path}:{lineno}: column {mapping.get(field, field)!r}: {err['msg'].removeprefix('Value error, ')}"
            ) from None
        model = options.model or row.model
        if not model:
            raise IngestError(f"{path}:{lineno}: empty model (column {mapping['model']!r})")
        dataset = options.dataset or row.dataset or path.stem
        groups.setdefault((model, dataset, row.domain), []).append((lineno, row))
    if not groups:
        raise IngestError(f"{path}: no predictions in the file")
    content_hash = hasher.hexdigest()
    for n, ((model, dataset, domain), rows) in enumerate(groups.items()):
        run = _build_run(path, kind, model, dataset, domain, rows, content_hash, options)
        yield run.model_copy(update={"notes": notes}) if n == 0 and notes else run


def header(path: Path, limits: Limits | None = None) -> list[str]:
    """The columns of a table of predictions (of its first row, for JSONL), for the app to offer
    when a load asks which column holds a field; [] when it is not one or cannot be read."""
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None or not path.is_file():
        return []
    try:
        rows = _rows(path, kind, limits or Limits.from_env())
        try:
            first = next(rows, None)
        finally:
            rows.close()  # the file (a workbook's two readers) closed now, not when collected
    except IngestError:
        return []
    return [str(c) for c in first[1]] if first else []


def id_column(columns: set[str], mapping: dict[str, str], column_map: dict[str, str]) -> str | None:
    """The column taken as the instance id when the file has no `instance_id` column and none is
    mapped: the first of ID_COLUMNS it has that no other field is mapped to."""
    if "instance_id" in column_map or mapping["instance_id"] in columns:
        return None
    used = set(column_map.values())
    return next((c for c in ID_COLUMNS if c in columns and c not in used), None)


def _build_run(path, kind, model, dataset, domain, rows, content_hash, options) -> ParsedRun:
    seen: dict[str, int] = {}
    for lineno, row in rows:
        if row.instance_id in seen:
            raise IngestError(
                f"{path}:{lineno}: instance {row.instance_id!r} of model {model!r} already on line {seen[row.instance_id]}"
            )
        seen[row.instance_id] = lineno
    dataset_raw = dataset
    dataset = canonical_dataset(dataset, options.pass_config.aliases) if not options.dataset else dataset
    override = options.pass_config.for_dataset(dataset, dataset_raw)
    uses_correct = any(r.correct is not None for _, r in rows)
    # a correct column is the verdict itself; a score column is judged on the scale the user gives
    rule = None if uses_correct else make_rule("score", "score column", override, lower_is_better=False)
    n_nonfinite = sum(1 for _, r in rows if r.score is not None and not is_finite(r.score))
    instructions = common(r.instructions for _, r in rows)
    instances = [
        InstanceRecord(
            instance_id=r.instance_id,
            raw_instance_id=r.instance_id,
            split=r.split,
            input_text=r.input,
            refs=[Reference(text=t, correct=True) for t in r.reference or []],
            question_hash=question_hash(r.input),
            # instructions that differ from row to row belong to each row's prompt
            prompt_text=r.prompt if r.prompt or instructions or not r.instructions else r.instructions,
            cluster=r.cluster,
        )
        for _, r in rows
    ]
    transcript = Transcript()
    column = options.column_map.get("messages", "messages")
    for lineno, r in rows:
        if r.messages is not None:
            add_messages(transcript, r.instance_id, 0, r.messages, f"{path}:{lineno}: column {column!r}", ref=column)
    predictions = []
    for _, r in rows:
        score = r.score if is_finite(r.score) else None
        predictions.append(PredictionRecord(
            instance_id=r.instance_id,
            output_text=r.output if r.output is not None or r.messages is None else said(r.messages, "assistant", last=True),
            metrics={"score": score} if score is not None else {},
            score=score if score is not None else (float(r.correct) if r.correct is not None else None),
            is_correct=r.correct if r.correct is not None else rule.judge(score) if rule else None,
            judge_notes=[JudgeNote(explanation=r.judge_explanation)] if r.judge_explanation else None,
            finish_reason=r.finish_reason,
        ))
    run = RunRecord(
        run_id=hashlib.sha1(f"custom|{path.resolve()}|{model}|{dataset}|{domain}".encode()).hexdigest()[:16],
        source_format=kind,
        source_path=str(path.resolve()),
        content_hash=content_hash,
        run_name=":".join(x for x in (path.name, model, dataset, domain) if x),
        model=model,
        dataset=dataset,
        dataset_raw=dataset_raw,
        domain=domain,
        main_metric="correct" if uses_correct else "score",
        main_metric_source="correct column" if uses_correct else "score column",
        **(rule.run_fields() if rule else CORRECT_COLUMN),
        main_split=next(iter(splits)) if len(splits := {r.split for _, r in rows}) == 1 else None,
        settings={"harness": kind},
        instructions=instructions,
    )
    return ParsedRun(run=run, instances=instances, predictions=predictions, n_nonfinite=n_nonfinite, rule=rule,
                     steps=transcript if len(transcript) else None)


# Tables of your own, one source per file kind; they take any file of their suffix, so they come last
_KINDS = (
    ("jsonl", "a .jsonl/.ndjson file of predictions, one object per line"),
    ("csv", "a .csv/.tsv file of predictions with a header row"),
    ("parquet", "a .parquet table of predictions"),
    ("xlsx", "an Excel .xlsx workbook of predictions (its first sheet, with a header row)"),
)
_CHAT = ((frozenset({"messages"}), "a chat dataset (messages), not model predictions"),)
SOURCES = tuple(
    Source(kind, partial(looks_like, kind=kind), partial(read, kind=kind), count_runs, expects,
           jsonl_lookalikes=_CHAT if kind == "jsonl" else ())
    for kind, expects in _KINDS
)
