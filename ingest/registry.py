"""The order of the sources (`--format auto` tries them in it), and choosing them for a path."""

from __future__ import annotations

from pathlib import Path

from core.errors import IngestError

from . import files
from .jsonio import parse_json, try_parse
from .source import Source
from .sources import (
    atif,
    custom,
    eee,
    helm,
    inspect_log,
    lmeval,
    messages,
    oaieval,
    openhands,
    promptfoo,
    swe_agent,
    tau_bench,
    terminal_bench,
    who_when,
)

# The order `--format auto` tries them in: the first source that recognises a file reads it.
# Content sniffers come before the tables of your own (jsonl, csv, ...), which take any file of
# their suffix. Everything else about a format lives in its module.
SOURCES: tuple[Source, ...] = (
    helm.SOURCE, lmeval.SOURCE, inspect_log.SOURCE, eee.SOURCE, oaieval.SOURCE, promptfoo.SOURCE,
    swe_agent.SOURCE, openhands.SOURCE, tau_bench.SOURCE, terminal_bench.SOURCE, atif.SOURCE, who_when.SOURCE, messages.SOURCE,
    *custom.SOURCES,
)
FORMATS = ("auto", *(s.name for s in SOURCES))


def choose(path: Path, fmt: str = "auto") -> list[Source]:
    """The sources for a path: the one `fmt` names, else every source that recognises it (a
    folder may hold HELM runs, lm-eval output and Inspect logs side by side)."""
    files.check_input(path)
    if fmt != "auto":
        for source in SOURCES:
            if source.name == fmt:
                return [source]
        raise IngestError(f"--format {fmt}: unknown format; choose from {', '.join(FORMATS)}")
    found = [source for source in SOURCES if source.looks_like(path)]
    if path.is_file():
        found = found[:1]
        if found and found[0].name == "jsonl" and (foreign := _foreign_jsonl(path)):
            raise IngestError(f"{path}: {foreign}")
    if found:
        return found
    tried = "; ".join(f"{r.name}: {r.expects}" for r in SOURCES)
    raise IngestError(
        f"{path}: not a log format Faultline recognises: it is {_observed(path)}. "
        f"Tried {tried}. Pass --format to force one."
    )


def _first_row(path: Path) -> dict | None:
    head = files.head(path, 1 << 20)
    row = try_parse(head.split(b"\n", 1)[0]) if head else None
    return row if isinstance(row, dict) else None


def _foreign_jsonl(path: Path) -> str | None:
    row = _first_row(path)
    if row is None:
        return None
    # formats a JSONL file can be in that the table reader would misread: name them, not --map
    for keys, what in (lookalike for source in SOURCES for lookalike in source.jsonl_lookalikes):
        if keys <= set(row) and not custom.predictions_row(set(row)):
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


def by_name(name: str) -> Source:
    return next(r for r in SOURCES if r.name == name)
