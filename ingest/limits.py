"""Caps on what one ingest will read, so that a hostile or broken log cannot exhaust memory.

A 1 MB .eval archive can expand to gigabytes (a zip bomb), and one text field can be hundreds of
megabytes; beyond a cap the input is refused with a message naming the file, the entry or
instance, the size and the setting that raises the cap. Nothing of that input is written.

| setting (environment)           | default | what it caps                                   |
|---------------------------------|---------|------------------------------------------------|
| FAULTLINE_MAX_ARCHIVE_BYTES     | 2 GiB   | everything read from one archive, decompressed |
| FAULTLINE_MAX_ENTRY_BYTES       | 256 MiB | one file inside an archive, decompressed       |
| FAULTLINE_MAX_TEXT_BYTES        | 32 MiB  | one text (an input, output, reference, ...)    |
| FAULTLINE_MAX_FILE_BYTES        | 2 GiB   | one file read from disk (a log, a JSON file)   |
| FAULTLINE_MAX_LINE_BYTES        | 64 MiB  | one line of a JSONL/CSV file (held whole)      |

Values are bytes; a suffix K, M or G (powers of 1024) is accepted.
"""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from core.numbers import NumberError, decimal_number, shown

from .errors import IngestError

KiB, MiB, GiB = 1024, 1024**2, 1024**3
ENV = {
    "archive_bytes": "FAULTLINE_MAX_ARCHIVE_BYTES",
    "entry_bytes": "FAULTLINE_MAX_ENTRY_BYTES",
    "text_bytes": "FAULTLINE_MAX_TEXT_BYTES",
    "file_bytes": "FAULTLINE_MAX_FILE_BYTES",
    "line_bytes": "FAULTLINE_MAX_LINE_BYTES",
}
_CHUNK = 1 * MiB


MAX_SIZE = 2**62  # more bytes than any machine holds; a bigger setting is a typing error


def parse_size(name: str, raw: str) -> int:
    """A size setting: a number in ASCII digits (core.numbers) with an optional K, M or G."""
    text = raw.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": KiB, "M": MiB, "G": GiB}.get(text[-1:], 1)
    digits = text[:-1] if scale > 1 else text
    try:
        number = decimal_number(digits, "")
    except NumberError:
        raise IngestError(f"{name}={shown(raw)}: expected a size in bytes, e.g. 268435456 or 256M") from None
    if number * scale > MAX_SIZE:
        raise IngestError(f"{name}={shown(raw)}: more than {MAX_SIZE // GiB:,} GiB; expected a size in bytes, "
                          "e.g. 268435456 or 256M")
    value = int(number * scale)
    if value <= 0:
        raise IngestError(f"{name}={shown(raw)}: must be positive")
    return value


def human(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class Limits:
    archive_bytes: int = 2 * GiB
    entry_bytes: int = 256 * MiB
    text_bytes: int = 32 * MiB
    file_bytes: int = 2 * GiB
    # a line is parsed whole (no JSON line is streamed): bounded as what an Inspect sample member
    # may be to be parsed whole (ingest/sources/inspect_log/stream.py STREAM_MEMBER_BYTES; larger
    # members are streamed)
    line_bytes: int = 64 * MiB

    @classmethod
    def from_env(cls) -> "Limits":
        """The defaults, overridden by the FAULTLINE_MAX_* environment variables."""
        values = {field: parse_size(var, os.environ[var]) for field, var in ENV.items() if os.environ.get(var)}
        return cls(**values)


class ArchiveReader:
    """Reads entries of one zip archive, refusing any that would take it past the caps.

    Sizes in the zip headers are checked before anything is decompressed, and the bytes actually
    inflated are counted while reading, because headers can lie (CPython's zipfile stops at the
    declared size and then fails the CRC check; the count keeps the caps independent of that).
    """

    def __init__(self, archive: zipfile.ZipFile, path: Path, limits: Limits):
        self.archive, self.path, self.limits = archive, path, limits
        self.total = 0

    def check_declared(self, names: list[str]) -> None:
        declared = 0
        for name in names:
            size = self.archive.getinfo(name).file_size
            self._check_entry(name, size)
            declared += size
        if declared > self.limits.archive_bytes:
            self._too_big(f"expands to {human(declared)}", self.limits.archive_bytes, "archive_bytes")

    def read(self, name: str) -> bytes:
        info = self.archive.getinfo(name)
        self._check_entry(name, info.file_size)
        chunks, size = [], 0
        with self.archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                self.total += len(chunk)
                self._check_entry(name, size)
                if self.total > self.limits.archive_bytes:
                    self._too_big(f"expands to at least {human(self.total)}", self.limits.archive_bytes, "archive_bytes")
                chunks.append(chunk)
        return b"".join(chunks)

    def stream(self, name: str) -> "_CountedStream":
        """An entry to read incrementally (a sample member too large to hold whole): its bytes
        count towards the archive's cap as they are inflated; the entry cap, which exists to
        bound what is held in memory, does not apply."""
        return _CountedStream(self, self.archive.open(self.archive.getinfo(name)))

    def _check_entry(self, name: str, size: int) -> None:
        if size > self.limits.entry_bytes:
            self._too_big(f"{name} expands to at least {human(size)}", self.limits.entry_bytes, "entry_bytes")

    def _too_big(self, what: str, cap: int, field: str) -> None:
        raise IngestError(
            f"{self.path}: refused: {what}, over the {human(cap)} limit "
            f"(a zip bomb, or raise {ENV[field]})"
        )


class _CountedStream:
    """A binary stream over one archive entry that counts what it inflates against the archive's cap."""

    def __init__(self, reader: ArchiveReader, raw) -> None:
        self.reader, self.raw = reader, raw

    def read(self, n: int = -1) -> bytes:
        if n == 0:  # a reader probing whether the stream gives bytes or text
            return b""
        chunk = self.raw.read(n if n > 0 else _CHUNK)
        self.reader.total += len(chunk)
        if self.reader.total > self.reader.limits.archive_bytes:
            self.reader._too_big(f"expands to at least {human(self.reader.total)}", self.reader.limits.archive_bytes,
                                 "archive_bytes")
        return chunk

    def close(self) -> None:
        self.raw.close()

    def __enter__(self) -> "_CountedStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
