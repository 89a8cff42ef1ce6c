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
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from .errors import IngestError
from .files import open_regular, read_capped
from .limits import ENV, Limits, human

# Python's json parser recurses once per level; orjson stops at 1,024 levels
TOO_DEEP = "JSON nested too deeply to read (over about 1,000 levels of arrays/objects)"
LONE_SURROGATE = "a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not text"
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


# the most digits an integer may have: beyond them no float holds it (1.8e308), so every reader's
# float() of it would raise OverflowError; 64-bit integers are orjson's, larger ones come here
MAX_INT_DIGITS = 308


def _bounded_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if MAX_INT_DIGITS < digits <= sys.get_int_max_str_digits():  # past that, int() says it itself
        raise ValueError(f"an integer of {digits:,} digits, over the {MAX_INT_DIGITS} read")
    return int(text)


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


def parse_json(raw: bytes | bytearray | str, where: object, *, line: int | None = None,
               cut: "bool | None | Callable[[], bool | None]" = None, limit: int | None = None) -> Any:
    """`raw` parsed, or IngestError naming `where` (and the line and column) and the problem.

    `line`: `raw` is that line of a JSONL file. `cut`: whether an error means the text was cut
    short (None: when the error is at its very end); a function giving it, asked only on an
    error (a JSONL reader learns whether a line is the last only by reading on)."""
    at = where if line is None else f"{where}:{line}"
    binary = isinstance(raw, (bytes, bytearray))
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
    if binary and "not valid UTF-8" in problem:
        # orjson says "surrogates not allowed" of any byte that is not UTF-8: find which
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IngestError(f"{at}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    if "surrogate" in problem:
        raise IngestError(f"{where}:{first.lineno + offset}:{first.colno}: {LONE_SURROGATE}")
    # the standard parser reads NaN/Infinity and long integers, and reports line and column precisely
    try:
        value = json.loads(raw, parse_int=_bounded_int)
    except UnicodeDecodeError as exc:
        raise IngestError(f"{at}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        text = raw.decode("utf-8", "replace") if binary else raw
        cut = cut() if callable(cut) else cut
        truncated = exc.pos >= len(text.rstrip()) if cut is None else cut
        what = ("truncated JSON" + (" line" if line is not None else "")) if truncated else "invalid JSON"
        raise IngestError(f"{where}:{exc.lineno + offset}:{exc.colno}: {what}: {exc.msg}") from None
    except RecursionError:
        raise IngestError(f"{at}: {TOO_DEEP}") from None
    except ValueError as exc:  # an integer longer than int() converts
        raise IngestError(f"{at}: a number too long to read ({str(exc).split(';')[0]})") from None
    escapes = _SURROGATE_ESCAPE.search(raw.decode("utf-8", "replace") if binary else raw)
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


def load_jsonl(path: Path, hasher: "hashlib._Hash | None" = None, limits: Limits | None = None
               ) -> list[tuple[int, dict]]:
    """(line number, object) for every non-blank line; a line that is not a JSON object is an error."""
    rows = []
    for lineno, row in read_jsonl(path, hasher, limits):
        if not isinstance(row, dict):
            raise IngestError(f"{path}:{lineno}: expected a JSON object, found {type(row).__name__}")
        rows.append((lineno, row))
    return rows


# A JSONL line is read a piece at a time: a line longer than the cap is refused when the cap is
# reached, holding no more than the cap (a 322 MB line read whole, then decoded and split, took
# 1.33 GB); a line under it is held once and parsed from those bytes
_PIECE = 1 << 20
UTF8_BOM = b"\xef\xbb\xbf"


def line_too_long(path: object, lineno: int, cap: int) -> IngestError:
    return IngestError(f"{path}:{lineno}: a line longer than the {human(cap)} limit on one line (a line is held "
                       f"whole to read it; raise {ENV['line_bytes']} to read it)")


class bounded_lines:  # noqa: N801  (used as a function)
    """(line number, its bytes without the newline, whether it had one) of every line of a binary
    stream, each refused over `limits.line_bytes` before more than that is held, the whole over
    `limits.file_bytes`; every byte goes to `hasher` in order (the same hash as the whole file's).
    An iterator rather than a generator: it keeps no reference to the line it gave, which can be
    freed as soon as its reader is done with it."""

    def __init__(self, path: Path, handle, limits: Limits, hasher: "hashlib._Hash | None" = None) -> None:
        self.path, self.handle, self.limits, self.hasher = path, handle, limits, hasher
        self.lineno = self.total = 0

    def __iter__(self) -> "bounded_lines":
        return self

    def __next__(self) -> tuple[int, bytes | bytearray, bool]:
        cap, handle = self.limits.line_bytes, self.handle
        piece = handle.readline(min(_PIECE, cap + 1))
        if not piece:
            raise StopIteration
        self.lineno += 1
        line: bytes | bytearray = piece
        if not piece.endswith(b"\n") and len(piece) == min(_PIECE, cap + 1):
            line = bytearray(piece)  # a long line: gathered piece by piece, up to the cap
            while len(line) <= cap and not line.endswith(b"\n"):
                piece = handle.readline(min(_PIECE, cap + 1 - len(line)))
                if not piece:
                    break
                line += piece
        self.total += len(line)
        if self.total > self.limits.file_bytes:
            raise IngestError(f"{self.path}: at least {human(self.total)}, over the {human(self.limits.file_bytes)} "
                              f"limit on one file (raise {ENV['file_bytes']} to read it)")
        if len(line) - line.endswith(b"\n") > cap:
            raise line_too_long(self.path, self.lineno, cap)
        if self.hasher is not None:
            self.hasher.update(line)
        ended = line.endswith(b"\n")
        if ended:
            if isinstance(line, bytearray):
                del line[-1:]  # in place: a long line is not copied
            else:
                line = line[:-1]
        return self.lineno, line, ended


def _rest_is_blank(handle) -> bool:
    """Whether nothing but whitespace is left in the stream (read to its end, a piece at a time)."""
    while piece := handle.read(_PIECE):
        if not piece.isspace():
            return False
    return True


def read_jsonl(path: Path, hasher: "hashlib._Hash | None" = None, limits: Limits | None = None,
               bom: bool = False, tell_cut: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, value) of every non-blank line of a JSONL file, read a line at a time (see
    `bounded_lines`); the file's name and bytes go to `hasher` as `read_bytes` adds them. `bom`:
    a UTF-8 byte-order mark before the first line is skipped (Excel writes one). `tell_cut`:
    a bad last line is called truncated when it looks cut short (else every bad line is invalid)."""
    limits = limits or Limits.from_env()
    with os.fdopen(open_regular(path, limits), "rb") as handle:
        if hasher is not None:
            hasher.update(path.name.encode())
        try:
            for lineno, line, ended in bounded_lines(path, handle, limits, hasher):
                if bom and lineno == 1 and line.startswith(UTF8_BOM):
                    line = line[len(UTF8_BOM):]
                if not line or line.isspace():
                    continue
                # a writer ends every line with a newline: a last line without one was cut off
                if not tell_cut:
                    cut: "bool | None | Callable[[], bool | None]" = False
                elif ended:
                    cut = lambda: None if _rest_is_blank(handle) else False  # noqa: E731
                else:
                    cut = True
                value = parse_json(line, path, line=lineno, cut=cut, limit=limits.line_bytes)
                del line  # the bytes go before the reader takes the value on
                yield lineno, value
        except OSError as exc:
            raise IngestError(f"{path}: cannot read: {exc.strerror or exc}") from None


def json_type(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (for messages about a field of the wrong type)."""
    return {bool: "true/false", int: "a number", float: "a number", str: "a string", list: "an array",
            dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)
