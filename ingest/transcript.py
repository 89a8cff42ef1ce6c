"""Transcripts of agent predictions: the steps readers find in a log, numbered, their texts cut at
a stated cap (the full length kept), held as Arrow batches rather than Python objects.

Readers call `Transcript.add` once per step, in the order the agent took them; each prediction's
steps are numbered from 0. A step's text longer than the cap (`FAULTLINE_STEP_TEXT_CHARS`,
20,000 characters by default) is cut, and `text_chars` keeps its full length, so memory and the
store grow with the number of steps, never with the size of what one step printed. Steps are
gathered column by column (a list per column, an Arrow batch every BATCH_ROWS steps), each value
checked as it is added to the type `StepRecord` (core/records.py) declares for its column: a
dict and a pydantic validation per step cost more than reading a step of most logs
(tests/ingest/test_transcripts.py holds the two to each other).
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone
from typing import Any

import orjson
import pyarrow as pa

from core.numbers import NumberError, shown, whole_number
from core.records import STEP_KINDS
from core.schema import STEP_SCHEMA

from .errors import IngestError
from .evidence import positive_int

STEP_TEXT_ENV = "FAULTLINE_STEP_TEXT_CHARS"
STEP_TEXT_CHARS_DEFAULT = 20_000
BATCH_ROWS = 2048

_TEXT_FIELDS = ("agent", "role", "tool_name", "tool_call_id", "error", "model", "finish_reason", "span_id",
                "parent_span_id", "source_ref")
_STEP_KINDS = frozenset(STEP_KINDS)


def step_text_cap() -> int:
    raw = os.environ.get(STEP_TEXT_ENV)
    if not raw:
        return STEP_TEXT_CHARS_DEFAULT
    try:
        value = whole_number(raw, "")
    except NumberError:
        raise IngestError(f"{STEP_TEXT_ENV}={shown(raw)}: expected a number of characters, e.g. 20000") from None
    if value <= 0:
        raise IngestError(f"{STEP_TEXT_ENV}={raw!r}: must be positive")
    return value


class Transcript:
    """The steps of one run's predictions, in the order added."""

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap or step_text_cap()
        self._columns: dict[str, list] = {name: [] for name in STEP_SCHEMA.names}
        self._batches: list[pa.RecordBatch] = []
        self._next: dict[tuple[str, int], int] = {}
        self.n_steps = 0
        self.n_tool_calls = 0
        self.n_tool_errors = 0  # tool results that carry an error
        self.n_cut = 0  # texts cut at the cap

    def __len__(self) -> int:
        return self.n_steps

    def n_of(self, instance_id: str, trial: int = 0) -> int:
        """How many steps the prediction has so far."""
        return self._next.get((instance_id, trial), 0)

    def predictions(self) -> set[tuple[str, int]]:
        return set(self._next)

    def add(self, instance_id: str, trial: int, kind: str, *, where: object, text: Any = None,
            arguments: Any = None, started_at: Any = None, input_tokens: Any = None, output_tokens: Any = None,
            seconds: Any = None, depth: int = 0, full_chars: int | None = None, **fields: Any) -> int:
        """Add one step; return its index. `where` names the place in the log for error messages.
        `arguments`: a tool call's arguments (a mapping, or JSON text as the model wrote it); other
        `fields` are StepRecord's text fields (agent, role, tool_name, ...). `full_chars`: the
        text's full length when the reader already cut it."""
        if kind not in _STEP_KINDS:
            raise ValueError(f"unknown step kind {kind!r}")
        # a reader's own values, not the user's file: a wrong type is a reader bug
        if instance_id.__class__ is not str or trial.__class__ is not int or depth.__class__ is not int or depth < 0:
            raise ValueError(f"transcript step of {instance_id!r} (trial {trial!r}, depth {depth!r}): "
                             "instance id must be text, trial and depth whole numbers, depth not negative")
        columns = self._columns
        key = (instance_id, trial)
        index = self._next.get(key, 0)
        self._next[key] = index + 1
        labels = {name: _label(fields.pop(name, None), name, where) for name in _TEXT_FIELDS}
        if fields:
            raise TypeError(f"unknown step field(s) {', '.join(fields)}")
        error = labels["error"]
        tool_arguments = None
        if kind == "tool call" and arguments is not None:
            whole, parse_error = _arguments(arguments)
            text = whole if text is None else text
            tool_arguments = whole if parse_error is None and len(whole) <= self.cap else None
            if parse_error and not error:
                error = labels["error"] = parse_error
        if text is not None and not isinstance(text, str):
            raise IngestError(f"{where}: expected text, found {type(text).__name__}")
        chars = max(len(text) if text else 0, full_chars or 0)
        if text is not None and len(text) > self.cap:
            text = text[: self.cap]
        if chars > len(text or ""):
            self.n_cut += 1
        for name, value in labels.items():
            columns[name].append(value)
        columns["instance_id"].append(instance_id)
        columns["train_trial_index"].append(trial)
        columns["step_index"].append(index)
        columns["kind"].append(kind)
        columns["depth"].append(depth)
        columns["tool_arguments"].append(tool_arguments)
        columns["text_chars"].append(chars)
        columns["text"].append(text)
        columns["input_tokens"].append(count(input_tokens))
        columns["output_tokens"].append(count(output_tokens))
        columns["seconds"].append(_seconds(seconds))
        columns["started_at"].append(timestamp(started_at))
        self.n_steps += 1
        if kind == "tool call":
            self.n_tool_calls += 1
        elif kind == "tool result" and error:
            self.n_tool_errors += 1
        if len(columns["kind"]) >= BATCH_ROWS:
            self._flush()
        return index

    def _flush(self) -> None:
        if not self._columns["kind"]:
            return
        self._batches.append(pa.RecordBatch.from_arrays(
            [pa.array(self._columns[field.name], type=field.type) for field in STEP_SCHEMA], schema=STEP_SCHEMA))
        self._columns = {name: [] for name in STEP_SCHEMA.names}

    def table(self) -> pa.Table:
        """Every step added, as one table in STEP_SCHEMA's columns."""
        self._flush()
        return pa.Table.from_batches(self._batches, schema=STEP_SCHEMA)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self._batches)


def empty_table() -> pa.Table:
    return STEP_SCHEMA.empty_table()


def _label(value: Any, name: str, where: object) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # an id written as a number
    raise IngestError(f"{where}: {name}: expected text, found {type(value).__name__}")


def _arguments(arguments: Any) -> tuple[str, str | None]:
    """A tool call's arguments as JSON text, and why they are not valid JSON (None when they are)."""
    if isinstance(arguments, str):
        try:
            orjson.loads(arguments)
        except orjson.JSONDecodeError as exc:
            return arguments, f"malformed tool call: its arguments are not valid JSON ({exc})"
        return arguments, None
    try:
        return orjson.dumps(arguments).decode(), None
    except (TypeError, orjson.JSONEncodeError):
        return str(arguments), "malformed tool call: its arguments are not JSON"


def count(value: Any) -> int | None:
    """A token count as logged (ints, integral floats, numeric text), else None; one too large
    for the store's BIGINT is None too."""
    n = positive_int(value)
    return n if n is not None and n < 2**62 else None


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def timestamp(value: Any) -> datetime | None:
    """A logged time as naive UTC: ISO 8601 text (with or without an offset; without one it is
    taken as UTC) or seconds since the epoch."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, (int, float)):
            if not math.isfinite(value) or not 0 < value < 32503680000:
                return None
            return datetime.fromtimestamp(value, timezone.utc).replace(tzinfo=None)
        if isinstance(value, str):
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            if moment.tzinfo is not None:
                moment = moment.astimezone(timezone.utc).replace(tzinfo=None)
            return moment
    except (ValueError, OverflowError, OSError):
        return None
    return None


def content_text(content: Any, where: object) -> str | None:
    """A message content as text: a string, or the parts of a list (text and reasoning as they
    are, reasoning first; an image, audio or document as [image] etc.; a tool-use part as its
    input), or None when empty."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        raise IngestError(f"{where}: content: expected text or a list of parts, found {type(content).__name__}")
    reasoning, texts = [], []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            raise IngestError(f"{where}: content: a part is {type(part).__name__}, expected an object or text")
        kind = part.get("type")
        if kind in ("reasoning", "thinking"):
            value = part.get(kind) or part.get("summary")
            if isinstance(value, str) and value.strip() and not part.get("redacted"):
                reasoning.append(value)
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind in ("image", "image_url", "audio", "input_audio", "video", "document", "file"):
            texts.append(f"[{kind}]")
        elif kind == "tool_use":
            texts.append(orjson.dumps(part.get("input")).decode())
        elif kind == "tool_result":
            inner = content_text(part.get("content"), where)
            if inner:
                texts.append(inner)
    joined = "\n".join([*reasoning, *texts])
    return joined or None
