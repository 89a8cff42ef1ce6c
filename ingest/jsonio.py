"""The one guarded JSON parse, and reading JSON files with errors that name the file, line and
problem.

Every JSON text ingest reads (whole files, JSONL lines, archive entries, format detection,
JSON held inside a field) goes through `parse_json`, which never raises anything but an
IngestError naming where and what: nesting deeper than about 1,000 levels, an integer of more
digits than Python converts (4,300), a lone UTF-16 surrogate escape (not text), a text over the
file size cap, invalid or truncated JSON. orjson reads the common case; the standard parser
reads what orjson refuses but JSON writers emit (NaN, Infinity, integers beyond 64 bits).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import orjson

from .errors import IngestError
from .files import read_capped
from .limits import ENV, Limits, human

# Python's json parser recurses once per level; orjson stops at 1,024 levels
TOO_DEEP = "JSON nested too deeply to read (over about 1,000 levels of arrays/objects)"
LONE_SURROGATE = "a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not text"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string in a parsed value holds a surrogate (the parser has already joined
    every valid pair, so any left is lone). Iterative: the value may be nested 1,000 deep."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_json(raw: bytes | str, where: object, *, line: int | None = None, cut: bool | None = None,
               limit: int | None = None) -> Any:
    """`raw` parsed, or IngestError naming `where` (and the line and column) and the problem.

    `line`: `raw` is that line of a JSONL file. `cut`: whether an error means the text was cut
    short (None: when the error is at its very end)."""
    at = where if line is None else f"{where}:{line}"
    offset = 0 if line is None else line - 1
    cap = limit if limit is not None else Limits.from_env().file_bytes
    if len(raw) > cap:
        raise IngestError(f"{at}: {human(len(raw))} of JSON, over the {human(cap)} limit "
                          f"(raise {ENV['file_bytes']} to read it)")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        first = exc
    problem = str(first)
    if problem.startswith("depth limit"):
        raise IngestError(f"{at}: {TOO_DEEP}")
    if "surrogate" in problem:
        raise IngestError(f"{where}:{first.lineno + offset}:{first.colno}: {LONE_SURROGATE}")
    # the standard parser reads NaN/Infinity and long integers, and reports line and column precisely
    try:
        value = json.loads(raw)
    except UnicodeDecodeError as exc:
        raise IngestError(f"{at}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        truncated = exc.pos >= len(text.rstrip()) if cut is None else cut
        what = ("truncated JSON" + (" line" if line is not None else "")) if truncated else "invalid JSON"
        raise IngestError(f"{where}:{exc.lineno + offset}:{exc.colno}: {what}: {exc.msg}") from None
    except RecursionError:
        raise IngestError(f"{at}: {TOO_DEEP}") from None
    except ValueError as exc:  # an integer longer than int() converts
        raise IngestError(f"{at}: a number too long to read ({str(exc).split(';')[0]})") from None
    escapes = _SURROGATE_ESCAPE.search(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw)
    if escapes and _has_lone_surrogate(value):
        raise IngestError(f"{at}: {LONE_SURROGATE}")
    return value


def try_parse(raw: bytes | str) -> Any:
    """`raw` parsed, or None for anything that does not parse (format detection)."""
    try:
        return parse_json(raw, "")
    except IngestError:
        return None


def read_bytes(path: Path, hasher: "hashlib._Hash | None" = None, limits: Limits | None = None) -> bytes:
    """A log file's bytes (a regular file, within the size cap), added to the run's content hash;
    unreadable files are named errors."""
    raw = read_capped(path, limits)
    if hasher is not None:
        hasher.update(path.name.encode())
        hasher.update(raw)
    return raw


def decode_utf8(path: Path, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_json(path: Path, hasher: "hashlib._Hash | None" = None) -> Any:
    return parse_json(read_bytes(path, hasher), path)


def expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise IngestError(f"{where}: expected {names}, found {type(value).__name__}")
    return value


def load_jsonl(path: Path, hasher: "hashlib._Hash | None" = None) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object is an error."""
    text = decode_utf8(path, read_bytes(path, hasher))
    rows = []
    lines = text.split("\n")
    final = next((n for n in range(len(lines), 0, -1) if lines[n - 1].strip()), 0)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        # a writer ends every line with a newline: a last line without one was cut off
        cut = None if lineno == final and text.endswith("\n") else lineno == final
        row = parse_json(line, path, line=lineno, cut=cut)
        if not isinstance(row, dict):
            raise IngestError(f"{path}:{lineno}: expected a JSON object, found {type(row).__name__}")
        rows.append((lineno, row))
    return rows


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (for messages about a field of the wrong type)."""
    return {bool: "true/false", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
