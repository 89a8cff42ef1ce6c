"""A store at a URL, read through a verified local copy.

`--db` / `FAULTLINE_DB` may name a store that lives elsewhere:

    https://host/path/store.duckdb          any HTTP(S) server (a presigned URL works too)
    s3://BUCKET/KEY                         S3 or an S3-compatible endpoint, SigV4-signed from AWS_* variables
    gs://BUCKET/KEY                         Google Cloud Storage (public, or a bearer token)
    hf://datasets/OWNER/REPO[@REV]/PATH     a file in a Hugging Face repo (HF_TOKEN for a private one)
    md:NAME                                 a MotherDuck database (needs DuckDB's motherduck extension)

Such a store is opened read-only. DuckDB can read a remote file itself through its httpfs
extension, but DuckDB fetches extensions from its own site at run time, which a hosted or
firewalled machine often cannot reach, and a dashboard runs dozens of queries per page, each a
round of range requests. So the file is downloaded once into a cache folder (streamed to a
temporary file, size-capped, checked to be a DuckDB file with Faultline's tables, brought to this
Faultline's schema, then renamed into place: a reader never sees half a copy) and revalidated
with a conditional GET (ETag / Last-Modified; 304 keeps the copy) at most every
`FAULTLINE_REMOTE_TTL` seconds. When the server cannot be reached, a verified copy is used and
a note says so; without one the store is refused. MotherDuck has no file to download: its
extension is the only way in, and when it cannot load the message says so.

Credentials come only from the environment (on Streamlit Community Cloud top-level secrets are
exported as environment variables): they are sent, never stored, and URLs are shown without
their query string (a presigned URL's signature) or user info.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator
from urllib.parse import quote, urlsplit, urlunsplit

from .errors import StoreError

URL_SCHEMES = ("http://", "https://", "s3://", "gs://", "hf://")
MOTHERDUCK = "md:"
CACHE_ENV = "FAULTLINE_CACHE_DIR"
TTL_ENV = "FAULTLINE_REMOTE_TTL"
MAX_BYTES_ENV = "FAULTLINE_REMOTE_MAX_BYTES"
TIMEOUT_ENV = "FAULTLINE_REMOTE_TIMEOUT"
DEFAULT_TTL_S = 60.0
DEFAULT_MAX_BYTES = 20 * 2**30
DEFAULT_TIMEOUT_S = 30.0
CHUNK = 1 << 20
# a DuckDB file starts with an 8-byte checksum, then this magic
DUCKDB_MAGIC = b"DUCK"
# what makes a DuckDB file a Faultline store
REQUIRED_TABLES = ("runs", "instances", "predictions", "schema_migrations")


class RemoteStoreError(StoreError):
    """A store at a URL that cannot be fetched, is not a Faultline store, or cannot be written."""


def is_remote(spec: str | os.PathLike | None) -> bool:
    text = str(spec or "")
    return text.startswith(URL_SCHEMES) or text.startswith(MOTHERDUCK)


def display(spec: str) -> str:
    """The URL as it may be shown: no user info, no query string (a presigned URL's signature)."""
    if spec.startswith(MOTHERDUCK):
        return spec.split("?", 1)[0]
    parts = urlsplit(spec)
    # the host as written (hf://OWNER/... keeps its case), without user info
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], parts.path, "", ""))


def cache_dir() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "faultline" / "stores"


def is_copy(path: str | os.PathLike) -> bool:
    """Whether `path` is a copy this module made (writing to it would write to nothing)."""
    try:
        return Path(path).resolve().parent == cache_dir().resolve()
    except OSError:
        return False


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        raise RemoteStoreError(f"{name} must be a number, got {os.environ[name]!r}") from None


# ------------------------------------------------------------------ where a URL is fetched from


@dataclass
class Request:
    url: str
    headers: dict[str, str]
    # the secret-bearing header values, for redaction
    secrets: tuple[str, ...] = ()
    sign_s3: tuple[str, str, str | None, str] | None = None  # (access key, secret, token, region)


def http_request(spec: str) -> Request:
    """The HTTP(S) GET that fetches `spec` (signing of s3:// is done per request)."""
    if spec.startswith(("http://", "https://")):
        return Request(spec, {})
    scheme, rest = spec.split("://", 1)
    if scheme == "hf":
        return _hf(rest, spec)
    bucket, _, key = rest.partition("/")
    if not bucket or not key:
        raise RemoteStoreError(f"{display(spec)}: expected {scheme}://BUCKET/KEY")
    if scheme == "gs":
        base = os.environ.get("STORAGE_EMULATOR_HOST") or "https://storage.googleapis.com"
        token = os.environ.get("GOOGLE_OAUTH_ACCESS_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return Request(f"{base.rstrip('/')}/{quote(bucket)}/{quote(key, safe='/-_.~')}", headers,
                       (token,) if token else ())
    return _s3(bucket, key)


def _hf(rest: str, spec: str) -> Request:
    # hf://datasets/OWNER/REPO[@REV]/PATH, hf://spaces/..., hf://OWNER/REPO/PATH (a model repo):
    # huggingface_hub's and DuckDB's spelling; the Hub serves files at .../resolve/REV/PATH
    parts = rest.split("/")
    kind = parts.pop(0) if parts and parts[0] in ("datasets", "spaces", "models") else "models"
    if len(parts) < 3 or not all(parts):
        raise RemoteStoreError(f"{display(spec)}: expected hf://datasets/OWNER/REPO[@REVISION]/PATH")
    owner, repo, path = parts[0], parts[1], "/".join(parts[2:])
    repo, _, rev = repo.partition("@")
    prefix = "" if kind == "models" else f"{kind}/"
    base = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    url = f"{base}/{prefix}{owner}/{repo}/resolve/{quote(rev or 'main', safe='')}/{quote(path, safe='/-_.~')}"
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    return Request(url, {"Authorization": f"Bearer {token}"} if token else {}, (token,) if token else ())


def _s3(bucket: str, key: str) -> Request:
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    path = quote(key, safe="/-_.~")
    if endpoint:  # S3-compatible servers (MinIO, R2, moto) take path-style addresses
        url = f"{endpoint.rstrip('/')}/{quote(bucket)}/{path}"
    elif "." in bucket:  # a dotted name breaks the virtual host's TLS certificate
        url = f"https://s3.{region}.amazonaws.com/{bucket}/{path}"
    else:
        url = f"https://{bucket}.s3.{region}.amazonaws.com/{path}"
    access, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not (access and secret):
        return Request(url, {})  # a public object
    token = os.environ.get("AWS_SESSION_TOKEN")
    return Request(url, {}, tuple(s for s in (secret, token) if s), (access, secret, token, region))


def sigv4_headers(method: str, url: str, access_key: str, secret_key: str, token: str | None,
                  region: str, when: datetime, service: str = "s3") -> dict[str, str]:
    """AWS Signature Version 4 headers for a request without a body (S3's GET)."""
    parts = urlsplit(url)
    amz_date = when.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    payload = hashlib.sha256(b"").hexdigest()
    headers = {"host": parts.netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date}
    if token:
        headers["x-amz-security-token"] = token
    signed = ";".join(sorted(headers))
    query = "&".join(sorted(
        f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}"
        for k, _, v in (p.partition("=") for p in parts.query.split("&") if p)))
    canonical = "\n".join([
        method, parts.path or "/", query,
        "".join(f"{k}:{headers[k].strip()}\n" for k in sorted(headers)), signed, payload,
    ])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret_key).encode()
    for part in (day, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    out = {"Host": parts.netloc, "x-amz-content-sha256": payload, "x-amz-date": amz_date,
           "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"}
    if token:
        out["x-amz-security-token"] = token
    return out


class _NoAuthAcrossHosts(urllib.request.HTTPRedirectHandler):
    """Follow redirects (the Hub sends files from a CDN), never carrying a credential to another host."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            for name in list(new.headers):
                if name.lower() in ("authorization", "x-amz-security-token"):
                    del new.headers[name]
        return new


_OPENER = urllib.request.build_opener(_NoAuthAcrossHosts)


# ------------------------------------------------------------------ the copy


@dataclass
class Source:
    """Where a remote store's data comes from, as the app and the CLIs say it."""

    source: str  # the URL, shown without secrets
    copy: str  # the local copy read
    etag: str | None = None
    last_modified: str | None = None
    size: int = 0
    fetched_at: str = ""  # when the current copy was downloaded (UTC, ISO)
    checked_at: str = ""  # when the server last confirmed it
    local_size: int = 0
    local_mtime_ns: int = 0
    note: str | None = None  # why the copy may be stale (the server was unreachable)

    def line(self) -> str:
        text = f"data from {self.source} (read-only copy fetched {_when(self.fetched_at)}"
        text += f", confirmed {_when(self.checked_at)})" if self.checked_at != self.fetched_at else ")"
        return text


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") + " UTC"


_memo: dict[str, tuple[float, Source]] = {}
_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()
_noted: set[tuple[str, str]] = set()


def _stamp() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def _paths(spec: str) -> tuple[Path, Path, Path]:
    name = Path(urlsplit(spec).path).name if not spec.startswith(MOTHERDUCK) else spec[3:].split("?", 1)[0]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "store"
    # the query is part of the identity (a presigned URL names the object) but never of the name
    digest = hashlib.sha256(spec.split("?", 1)[0].encode()).hexdigest()[:16]
    folder = cache_dir()
    copy = folder / f"{digest}-{safe}" if safe.endswith(".duckdb") else folder / f"{digest}-{safe}.duckdb"
    return copy, copy.with_name(copy.name + ".source.json"), copy.with_name(copy.name + ".lock")


def _load_meta(meta_path: Path, copy: Path) -> Source | None:
    """The record of a copy, when the copy is the one it describes (else it is fetched afresh)."""
    try:
        meta = Source(**json.loads(meta_path.read_text(encoding="utf-8")))
        st = copy.stat()
    except (OSError, ValueError, TypeError):
        return None
    if (st.st_size, st.st_mtime_ns) != (meta.local_size, meta.local_mtime_ns):
        return None
    meta.note = None
    return meta


def _write_meta(meta_path: Path, meta: Source) -> None:
    tmp = meta_path.with_name(meta_path.name + ".tmp")
    tmp.write_text(json.dumps({**asdict(meta), "note": None}, indent=1), encoding="utf-8")
    os.replace(tmp, meta_path)


@contextlib.contextmanager
def _locked(spec: str, lock_path: Path) -> Iterator[None]:
    """One fetch of a store at a time, across threads (the app's sessions) and processes."""
    with _guard:
        lock = _locks.setdefault(spec, threading.Lock())
    with lock:
        try:
            import fcntl
        except ImportError:
            yield
            return
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def notify(message: str) -> None:
    """Say on stderr (once per process) what a CLI user must know about the data it reads."""
    print(f"note: {message}", file=sys.stderr)


def source(spec: str) -> Source:
    """The verified local copy of the store at `spec`, fetched or revalidated when the last check
    is older than FAULTLINE_REMOTE_TTL seconds."""
    ttl = _env_float(TTL_ENV, DEFAULT_TTL_S)
    hit = _memo.get(spec)
    if hit is not None and time.monotonic() - hit[0] < ttl and Path(hit[1].copy).exists():
        return hit[1]
    copy, meta_path, lock_path = _paths(spec)
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RemoteStoreError(f"{copy.parent}: cannot create the cache folder for {display(spec)}: {exc.strerror} "
                               f"(set {CACHE_ENV} to a writable folder)") from None
    with _locked(spec, lock_path):
        hit = _memo.get(spec)
        if hit is not None and time.monotonic() - hit[0] < ttl and Path(hit[1].copy).exists():
            return hit[1]  # another thread fetched it while this one waited
        known = _load_meta(meta_path, copy)
        if spec.startswith(MOTHERDUCK):
            found = _motherduck(spec, copy, meta_path, known)
        else:
            found = _fetch(spec, copy, meta_path, known)
    _memo[spec] = (time.monotonic(), found)
    if found.note and (spec, found.note) not in _noted:
        _noted.add((spec, found.note))
        notify(found.note)
    return found


def local_copy(spec: str) -> Path:
    return Path(source(spec).copy)


def _redact(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def _open(req: Request, known: Source | None, timeout: float):
    headers = dict(req.headers)
    if known is not None:
        if known.etag:
            headers["If-None-Match"] = known.etag
        if known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
    if req.sign_s3 is not None:
        access, secret, token, region = req.sign_s3
        headers.update(sigv4_headers("GET", req.url, access, secret, token, region, datetime.now(timezone.utc)))
    r = urllib.request.Request(req.url, method="GET")
    for k, v in headers.items():
        # a credential never follows a redirect
        if k.lower() in ("authorization", "x-amz-security-token"):
            r.add_unredirected_header(k, v)
        else:
            r.add_header(k, v)
    return _OPENER.open(r, timeout=timeout)


def _fetch(spec: str, copy: Path, meta_path: Path, known: Source | None) -> Source:
    shown = display(spec)
    req = http_request(spec)
    timeout = _env_float(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)
    now = _stamp()
    try:
        resp = _open(req, known, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 304 and known is not None:
            known.checked_at = now
            _write_meta(meta_path, known)
            return known
        reason = f"the server answered HTTP {exc.code} {exc.reason}"
        if exc.code >= 500 or exc.code == 429:
            return _unreachable(shown, known, reason)
        hint = {401: "; give credentials in the environment (see docs/hosting.md)",
                403: "; the object is private or the credentials lack access (see docs/hosting.md)",
                404: "; check the URL"}.get(exc.code, "")
        raise RemoteStoreError(_redact(f"{shown}: cannot read the store: {reason}{hint}", req.secrets)) from None
    except (urllib.error.URLError, OSError) as exc:
        cause = getattr(exc, "reason", exc)
        return _unreachable(shown, known, _redact(f"the server could not be reached ({cause})", req.secrets))
    with resp:
        max_bytes = int(_env_float(MAX_BYTES_ENV, DEFAULT_MAX_BYTES))
        length = resp.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise RemoteStoreError(f"{shown}: the store is {int(length):,} bytes, over the {max_bytes:,}-byte limit "
                                   f"({MAX_BYTES_ENV})")
        fd, tmp_name = tempfile.mkstemp(dir=copy.parent, prefix=".part-", suffix=".duckdb")
        tmp = Path(tmp_name)
        try:
            digest, size = hashlib.sha256(), 0
            with os.fdopen(fd, "wb") as out:
                try:
                    while chunk := resp.read(CHUNK):
                        size += len(chunk)
                        if size > max_bytes:
                            raise RemoteStoreError(f"{shown}: the store is over the {max_bytes:,}-byte limit "
                                                   f"({MAX_BYTES_ENV}); nothing was kept")
                        digest.update(chunk)
                        out.write(chunk)
                except (OSError, urllib.error.URLError) as exc:
                    return _unreachable(shown, known, f"the download broke off after {size:,} bytes ({exc})")
                out.flush()
                os.fsync(out.fileno())
            if length and length.isdigit() and size != int(length):
                return _unreachable(shown, known, f"the download ended after {size:,} of {int(length):,} bytes")
            verify(tmp, shown)
            st = tmp.stat()
            meta = Source(source=shown, copy=str(copy), etag=resp.headers.get("ETag"),
                          last_modified=resp.headers.get("Last-Modified"), size=size, fetched_at=now,
                          checked_at=now, local_size=st.st_size, local_mtime_ns=st.st_mtime_ns)
            os.replace(tmp, copy)
            _write_meta(meta_path, meta)
            _fsync_dir(copy.parent)
            return meta
        finally:
            tmp.unlink(missing_ok=True)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _unreachable(shown: str, known: Source | None, reason: str) -> Source:
    if known is None:
        raise RemoteStoreError(f"{shown}: cannot read the store: {reason}, and there is no earlier verified copy")
    known.note = (f"{shown}: {reason}; showing the copy fetched {_when(known.fetched_at)} "
                  f"(last confirmed {_when(known.checked_at)}), which may be out of date")
    return known


def verify(path: Path, shown: str) -> None:
    """Refuse anything but a DuckDB file holding Faultline's tables; bring an older store to
    this Faultline's schema (the copy is ours; the published file is untouched)."""
    import duckdb

    from .migrations import migrate

    with open(path, "rb") as fh:
        head = fh.read(12)
    if head[8:12] != DUCKDB_MAGIC:
        raise RemoteStoreError(f"{shown}: not a DuckDB database file (it starts with {head[:12]!r})")
    try:
        con = duckdb.connect(str(path), config={"autoinstall_known_extensions": False,
                                                "autoload_known_extensions": False})
    except duckdb.Error as exc:
        raise RemoteStoreError(f"{shown}: not a usable DuckDB database: {exc}") from None
    try:
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise RemoteStoreError(f"{shown}: a DuckDB file, but not a Faultline store (no {', '.join(missing)} table); "
                                   "publish a store written by `python -m ingest`")
        try:
            migrate(con)
        except StoreError as exc:
            raise RemoteStoreError(f"{shown}: {exc.message}") from None
        except duckdb.Error as exc:
            raise RemoteStoreError(f"{shown}: the store could not be brought to this Faultline's schema: {exc}") from None
        con.execute("CHECKPOINT")
    finally:
        con.close()


# ------------------------------------------------------------------ MotherDuck


def motherduck_available() -> str | None:
    """None when DuckDB's motherduck extension loads here, else why not (never downloading it:
    installing extensions is DuckDB's INSTALL, done once where its site can be reached)."""
    import duckdb

    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    try:
        con.execute("LOAD motherduck")
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    finally:
        con.close()
    return None


def snapshot(attach: str, target: Path, shown: str) -> None:
    """Copy a database DuckDB can attach (a MotherDuck database) into `target`, then verify it."""
    import duckdb

    target.unlink(missing_ok=True)
    con = duckdb.connect()
    try:
        con.execute("ATTACH ? AS src (READ_ONLY)", [attach])
        con.execute("ATTACH ? AS dst", [str(target)])
        con.execute("COPY FROM DATABASE src TO dst")
    except duckdb.Error as exc:
        raise RemoteStoreError(f"{shown}: cannot copy the database: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()
    verify(target, shown)


def _motherduck(spec: str, copy: Path, meta_path: Path, known: Source | None) -> Source:
    shown = display(spec)
    why = motherduck_available()
    if why is not None:
        if known is not None:
            return _unreachable(shown, known, f"DuckDB's motherduck extension cannot load ({why})")
        raise RemoteStoreError(
            f"{shown}: a MotherDuck store needs DuckDB's motherduck extension, which cannot load here ({why}). "
            "Run `INSTALL motherduck` in DuckDB where its extension site can be reached, or publish the "
            "store file to a bucket or a Hugging Face dataset and give its URL (docs/hosting.md)"
        )
    # MotherDuck offers no validator to revalidate against: a fresh snapshot after each TTL
    fd, tmp_name = tempfile.mkstemp(dir=copy.parent, prefix=".part-", suffix=".duckdb")
    os.close(fd)
    tmp = Path(tmp_name)
    now = _stamp()
    try:
        snapshot(spec, tmp, shown)
        st = tmp.stat()
        meta = Source(source=shown, copy=str(copy), size=st.st_size, fetched_at=now, checked_at=now,
                      local_size=st.st_size, local_mtime_ns=st.st_mtime_ns)
        os.replace(tmp, copy)
        _write_meta(meta_path, meta)
        return meta
    finally:
        tmp.unlink(missing_ok=True)
