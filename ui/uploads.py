"""What the app accepts from a browser: uploaded files checked before anything is written, and
paths on the server limited to configured roots.

Every check runs on the uploaded bytes in memory first; only when all files pass are they written,
each upload into a folder of its own, so a refused upload leaves nothing behind and two uploads
(same file name, same second, other sessions) never share a folder. A `.zip` (a HELM suite, a
folder of logs) is unpacked there, entry by entry, under the same caps; an archive whose headers
promise more than the caps allow (in all, per entry, or by how much it expands) is refused from
its headers, before a byte is inflated.

An archive inside a `.zip` (an Inspect `.eval`, which ingest opens as a zip, or another `.zip`)
is checked before anything is unpacked, from its own central directory: its entries count
against the same caps as the outer archive's (their number, the total they unpack to, how much
each and the whole expand), and a refusal names the outer file and the inner entry. Unchecked,
an `.eval` inside a `.zip` was unpacked and then inflated by ingest until its own caps refused it
(the issue measured 116 s and 517 MB).
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tempfile
import time
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from core.numbers import NumberError, decimal_number
from store import FaultlineError

PROJECT_DATA = Path(__file__).resolve().parent.parent / "data"
TEXT_TYPES = {".jsonl", ".ndjson", ".csv", ".tsv", ".json"}
# .eval: an Inspect log, and .xlsx: a spreadsheet of predictions (both zip files), kept whole
# and checked from their central directory like any archive; .zip: a folder of logs, unpacked
ARCHIVE_TYPES = {".eval", ".xlsx", ".zip"}
UPLOAD_TYPES = sorted(t.lstrip(".") for t in TEXT_TYPES | ARCHIVE_TYPES)
MIB = 1024 * 1024
NAME_BYTES = 255  # the longest file name most file systems take
MAX_ENTRIES = 100_000
# folders deep an archive entry may be: a HELM suite is a few; 2,000 made the unpacking recurse
# past Python's limit (a RecursionError traceback with server paths)
MAX_DEPTH = 64
# below this an entry may compress as well as it likes (a small JSON file of repeated keys)
SMALL_ENTRY = 64 * 1024


def _limit(env: str, default_mib: int) -> int:
    """A size setting in MiB (ASCII digits, core.numbers); one that is not a positive number is
    an error naming it rather than a silent default."""
    raw = os.environ.get(env)
    if raw is None or not raw.strip():
        return default_mib * MIB
    try:
        value = decimal_number(raw, env, low=0, high=2**40, what="a size in MiB")
    except NumberError as exc:
        raise UploadRefused(f"{exc.message}; uploads are refused until it is fixed") from None
    if value * MIB < 1:
        raise UploadRefused(f"{env}={raw!r}: must be positive; uploads are refused until it is fixed")
    return int(value * MIB)


@dataclass(frozen=True)
class Limits:
    """Caps on what one upload may hold (MiB; each configurable through its variable)."""

    file_bytes: int
    unpacked_bytes: int
    line_bytes: int
    # an archive entry that expands more than this many times is treated as a bomb
    max_ratio: int = 200

    @classmethod
    def from_env(cls) -> "Limits":
        return cls(_limit("FAULTLINE_MAX_UPLOAD_MB", 200), _limit("FAULTLINE_MAX_UNPACKED_MB", 1024),
                   _limit("FAULTLINE_MAX_LINE_MB", 32))


class UploadRefused(FaultlineError):
    """An uploaded file that is not written: the message says which and why."""


def _safe_name(name: str) -> str:
    """The upload's own file name, refused when it tries to be a path."""
    if not name or "\x00" in name or name in (".", ".."):
        raise UploadRefused(f"{name!r}: not a usable file name")
    if PurePosixPath(name).name != name or PureWindowsPath(name).name != name:
        raise UploadRefused(f"{name!r}: a file name may not contain a folder or drive")
    if len(name.encode("utf-8")) > NAME_BYTES:
        raise UploadRefused(f"{name[:40]}…: a file name of {len(name.encode('utf-8'))} bytes, longer than the "
                            f"{NAME_BYTES} a file system takes; rename it and upload again")
    suffix = Path(name).suffix.lower()
    if suffix not in TEXT_TYPES | ARCHIVE_TYPES:
        raise UploadRefused(f"{name}: not a log type Faultline reads ({', '.join(UPLOAD_TYPES)})")
    return name


def _check_text(name: str, data: bytes, limits: Limits) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadRefused(f"{name}: not UTF-8 text (undecodable byte at offset {exc.start}); "
                            "save it as UTF-8 and upload again") from None
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        if end - start > limits.line_bytes:
            raise UploadRefused(f"{name}: a line longer than {limits.line_bytes // MIB} MiB "
                                "(FAULTLINE_MAX_LINE_MB); refused")
        start = end + 1


@dataclass
class _Tally:
    """What one upload's archives hold together, the archives inside it included."""

    entries: int = 0
    declared: int = 0


def _entries(name: str, archive: zipfile.ZipFile, size: int, limits: Limits,
             tally: _Tally | None = None) -> list[zipfile.ZipInfo]:
    """The archive's file entries, every one checked from its header before anything is inflated:
    no path out of the archive, no link, no name a file system refuses, and sizes within the caps
    — in all, and by how much each entry and the whole expand. `tally`: what the upload's other
    archives (the one holding this one) already count against the caps."""
    tally = tally if tally is not None else _Tally()
    infos = archive.infolist()
    if tally.entries + len(infos) > MAX_ENTRIES:
        more = f" (with the {tally.entries:,} of the archive holding it)" if tally.entries else ""
        raise UploadRefused(f"{name}: {len(infos):,} entries{more}, more than {MAX_ENTRIES:,}; refused")
    files, declared = [], 0
    seen: dict[tuple[str, ...], str] = {}
    for info in infos:
        entry = info.filename
        parts = PurePosixPath(entry.replace("\\", "/")).parts
        if len(parts) > MAX_DEPTH:
            raise UploadRefused(f"{name}: entry {entry[:80]!r}… is {len(parts):,} folders deep, more than "
                                f"{MAX_DEPTH}; refused")
        if entry.startswith(("/", "\\")) or PureWindowsPath(entry).drive or ".." in parts:
            raise UploadRefused(f"{name}: entry {entry!r} points outside the archive; refused")
        if stat.S_ISLNK(info.external_attr >> 16):
            raise UploadRefused(f"{name}: entry {entry!r} is a symbolic link; refused")
        if "\x00" in entry or any(len(p.encode("utf-8")) > NAME_BYTES for p in parts):
            raise UploadRefused(f"{name}: entry {entry[:60]!r}… has a name no file system takes; refused")
        if info.is_dir():
            continue
        key = tuple(p.casefold() for p in parts)
        if key in seen:
            raise UploadRefused(f"{name}: entry {entry!r} is in the archive twice (as {seen[key]!r} too); refused")
        seen[key] = entry
        if info.file_size > SMALL_ENTRY and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            raise UploadRefused(f"{name}: entry {entry!r} expands more than {limits.max_ratio}× "
                                "(a compression bomb?); refused")
        declared += info.file_size
        files.append(info)
    folders = {key[:i] for key in seen for i in range(1, len(key))}
    clash = next((entry for key, entry in seen.items() if key in folders), None)
    if clash is not None:
        raise UploadRefused(f"{name}: entry {clash!r} is both a file and a folder of other entries; refused")
    if tally.declared + declared > limits.unpacked_bytes:
        more = (f" ({declared // MIB:,} MiB, with the {tally.declared // MIB:,} MiB of the archive holding it)"
                if tally.declared else "")
        raise UploadRefused(f"{name}: unpacks to more than {limits.unpacked_bytes // MIB} MiB{more} "
                            "(FAULTLINE_MAX_UNPACKED_MB); refused")
    if declared > MIB and declared > limits.max_ratio * size:
        raise UploadRefused(f"{name}: expands more than {limits.max_ratio}× as a whole ({declared // MIB:,} MiB "
                            "from a few entries that each look small: a compression bomb?); refused")
    tally.entries += len(infos)
    tally.declared += declared
    return files


def _check_nested(name: str, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: Limits,
                  tally: _Tally) -> None:
    """Every archive among `infos` (a .eval, .xlsx or .zip entry) checked as one uploaded alone would be,
    its entries counted in `tally` with the outer archive's, before anything is unpacked. Its
    central directory sits at its end, so the entry is inflated first (into a spooled temporary
    file, within the caps its own header was checked against); then its headers are checked, then
    its entries are read through, counted, as an uploaded .eval's are."""
    for info in infos:
        suffix = PurePosixPath(info.filename).suffix.lower()
        if suffix not in ARCHIVE_TYPES:
            continue
        where = f"{name}: entry {info.filename!r}"
        with tempfile.SpooledTemporaryFile(max_size=16 * MIB) as held:
            _inflate(name, archive, [info], limits, lambda _info, chunk: held.write(chunk))
            held.seek(0)
            try:
                inner = zipfile.ZipFile(held)
            except zipfile.BadZipFile:
                raise UploadRefused(f"{where}: not a readable {suffix} archive (zip); refused") from None
            with inner:
                try:
                    _inflate(where, inner, _entries(where, inner, info.file_size, limits, tally), limits)
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
                    raise UploadRefused(f"{where}: corrupt archive ({exc}); refused") from None


def _inflate(name: str, archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], limits: Limits,
             sink=None) -> None:
    """Read every entry, counting what really comes out (headers can lie) and stopping at the
    caps; `sink(info, chunk)` receives the bytes (None: only checked)."""
    total = 0
    for info in infos:
        written = 0
        with archive.open(info) as stream:
            while chunk := stream.read(MIB):
                written += len(chunk)
                total += len(chunk)
                if total > limits.unpacked_bytes:
                    raise UploadRefused(
                        f"{name}: unpacks to more than {limits.unpacked_bytes // MIB} MiB "
                        "(FAULTLINE_MAX_UNPACKED_MB); refused")
                if written > max(info.file_size, SMALL_ENTRY) or (
                        written > SMALL_ENTRY and written > limits.max_ratio * max(info.compress_size, 1)):
                    raise UploadRefused(
                        f"{name}: entry {info.filename!r} expands more than {limits.max_ratio}× "
                        "(a compression bomb?); refused")
                if sink is not None:
                    sink(info, chunk)


def _open_archive(name: str, data: bytes) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise UploadRefused(f"{name}: not a readable {Path(name).suffix.lower()} archive (zip)") from None


def _check_archive(name: str, data: bytes, limits: Limits) -> None:
    with _open_archive(name, data) as archive:
        try:
            _inflate(name, archive, _entries(name, archive, len(data), limits), limits)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise UploadRefused(f"{name}: corrupt archive ({exc}); refused") from None


def _unpack(name: str, data: bytes, folder: Path, limits: Limits) -> Path:
    """Unpack a .zip into `folder`/<its name without .zip>/ under the caps; returns that folder."""
    target = folder / (Path(name).stem or "archive")
    target.mkdir()
    handles: dict[str, object] = {}

    def sink(info: zipfile.ZipInfo, chunk: bytes) -> None:
        out = handles.get(info.filename)
        if out is None:
            path = target.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                out = handles[info.filename] = open(path, "xb")
            except (FileExistsError, IsADirectoryError, NotADirectoryError) as exc:
                raise UploadRefused(f"{name}: entry {info.filename!r} cannot be unpacked: {exc.strerror} "
                                    "(another entry of the archive has its name); refused") from None
        out.write(chunk)

    with _open_archive(name, data) as archive:
        try:
            infos = _entries(name, archive, len(data), limits)
            # an empty entry gives no chunk: make its file too
            for info in infos:
                if info.file_size == 0:
                    sink(info, b"")
            _inflate(name, archive, infos, limits, sink)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise UploadRefused(f"{name}: corrupt archive ({exc}); refused") from None
        finally:
            for out in handles.values():
                out.close()
    return target


def check_upload(name: str, data: bytes, limits: Limits | None = None) -> str:
    """Raise UploadRefused unless this file may be written; returns its safe name."""
    limits = limits or Limits.from_env()
    name = _safe_name(name)
    if len(data) > limits.file_bytes:
        raise UploadRefused(f"{name}: larger than {limits.file_bytes // MIB} MiB "
                            "(FAULTLINE_MAX_UPLOAD_MB); refused")
    if Path(name).suffix.lower() in (".eval", ".xlsx"):
        _check_archive(name, data, limits)
    elif Path(name).suffix.lower() == ".zip":
        # the headers now, and those of every archive inside; the bytes as they are unpacked
        with _open_archive(name, data) as archive:
            tally = _Tally()
            infos = _entries(name, archive, len(data), limits, tally)
            try:
                _check_nested(name, archive, infos, limits, tally)
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
                raise UploadRefused(f"{name}: corrupt archive ({exc}); refused") from None
    else:
        _check_text(name, data, limits)
    return name


def save_uploads(files: list[tuple[str, bytes]], upload_root: Path,
                 limits: Limits | None = None) -> list[Path]:
    """Check every (name, bytes), then write them all into a new folder of their own (a .zip
    unpacked into a folder there). Returns what to ingest: the files, and the unpacked folders.

    Raises UploadRefused (nothing written) when any file fails a check.
    """
    limits = limits or Limits.from_env()
    checked = [(check_upload(name, data, limits), data) for name, data in files]
    if not checked:
        return []
    try:
        upload_root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=upload_root))
    except OSError as exc:
        raise UploadRefused(f"{upload_root.name}: cannot store uploads here ({exc.strerror or exc})") from None
    written, used = [], set()
    try:
        for i, (name, data) in enumerate(checked):
            # two files with one name in the same upload each keep their bytes
            place = folder if name not in used else folder / str(i)
            used.add(name)
            place.mkdir(exist_ok=True)
            if Path(name).suffix.lower() == ".zip":
                written.append(_unpack(name, data, place, limits))
                continue
            with open(place / name, "xb") as out:
                out.write(data)
            written.append(place / name)
    except BaseException as exc:
        shutil.rmtree(folder, ignore_errors=True)  # a refused or failed upload leaves nothing behind
        if isinstance(exc, OSError):
            raise UploadRefused(f"cannot store the upload ({exc.strerror or exc}); nothing was kept") from None
        raise
    return written


def data_roots(upload_root: Path) -> list[Path]:
    """Folders the app may read logs from: $FAULTLINE_DATA_ROOTS (os.pathsep-separated), else
    the project's data/ folder and the upload folder."""
    raw = os.environ.get("FAULTLINE_DATA_ROOTS", "")
    roots = [Path(p) for p in raw.split(os.pathsep) if p.strip()] or [PROJECT_DATA, upload_root]
    return [r.expanduser().resolve() for r in roots]


def allowed_path(text: str, roots: list[Path]) -> Path:
    """The path typed in the app, resolved, if it lies under a root (else UploadRefused).

    Checked before looking at the file system, so the answer for a path outside the roots is
    the same whether or not it exists.
    """
    if "\x00" in text:
        raise UploadRefused(f"{text!r}: not a usable path (it holds a NUL byte)")
    try:
        path = Path(text).expanduser()
        if not path.is_absolute():
            path = roots[0] / path
        resolved = path.resolve()
        inside = any(resolved == r or r in resolved.parents for r in roots)
        exists = inside and resolved.exists()
    except (OSError, RuntimeError, ValueError) as exc:  # a name too long, a link loop
        raise UploadRefused(f"{text[:200]}: not a usable path ({getattr(exc, 'strerror', None) or exc})") from None
    if not inside:
        raise UploadRefused(f"{text}: the app reads logs only under "
                            f"{', '.join(str(r) for r in roots)} (set FAULTLINE_DATA_ROOTS)")
    if not exists:
        raise UploadRefused(f"{text}: no such file or folder under the allowed folders")
    return resolved
