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
round of range requests. So the file is downloaded into a cache folder and revalidated with a
conditional GET (ETag / Last-Modified; 304 keeps the copy) at most every `FAULTLINE_REMOTE_TTL`
seconds. A download runs in a thread of its own, under no lock a page waits on, with a total
deadline and a stall rule (`_download`); pages show the verified copy meanwhile, and say how old
it is (`source`). A download is untrusted input: it becomes the copy only once verified in full
(`verify`: Faultline's schema and nothing else, every table read to the end and rewritten, every
published checksum matched); one that fails, like a server that cannot be reached, leaves the
verified copy in place with a note saying why; without one the store is refused. MotherDuck has
no file to download: its extension is the only way in, and when it cannot load the message says
so.

Credentials come only from the environment (on Streamlit Community Cloud top-level secrets are
exported as environment variables): they are sent to the store's own origin only, never stored,
and URLs are shown without their query string (a presigned URL's signature) or user info. The
store's server is untrusted too: a redirect is followed only to the store's host, a host of its
service or one FAULTLINE_REDIRECT_HOSTS lists, and never to an address that is not public
(`redirect_refusal`, `_connect`); `/healthz` (`health`) starts at most one fetch per TTL and names
no server path.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import http.client
import ipaddress
import json
import os
import re
import socket
import string
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

import duckdb

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
DEADLINE_ENV = "FAULTLINE_REMOTE_DEADLINE"
DEFAULT_DEADLINE_S = 600.0
SHA256_ENV = "FAULTLINE_DB_SHA256"
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


# ------------------------------------------------------------------ redirects: where a fetch may go
#
# A store's server is untrusted too: its redirect could send the fetch to the host's own services
# (127.0.0.2, a cloud's metadata address 169.254.169.254, a private 10.x server), whose answer
# would then be read and quoted. So `_open` follows a redirect itself, one hop at a time, and only
# to the store's own host, a host the user allows (FAULTLINE_REDIRECT_HOSTS) or one the store's
# service is known to send files from (`redirect_refusal`); and a hop after a redirect connects
# only to an address that is public or the store host's own, checked on the address actually
# connected to (`_connect`: resolved once, then that exact address, the name kept for Host and
# TLS). A refusal names the host and why, never a byte of the answer.

REDIRECT_HOSTS_ENV = "FAULTLINE_REDIRECT_HOSTS"
MAX_REDIRECTS = 10
MAX_REPEATS = 4  # the same address this often is a loop (as urllib counts)
_REDIRECTS = (301, 302, 303, 307, 308)
# what a request carries to another origin than the store's (never a credential, nor the store's
# Host or signature): the revalidation and S3's checksum request
_CARRIED = ("if-none-match", "if-modified-since", "x-amz-checksum-mode")
# The Hugging Face Hub answers a `resolve` URL of a file kept in LFS or Xet with a redirect to its
# CDN: the Hub's hosts, its LFS hosts (lfsDomains of https://huggingface.co/.well-known/meta.json),
# the Xet bridge, and the CDN's regional hosts (cdnDomains there: aws.cdn.hf.co, us.gcp.cdn.hf.co, ...)
HF_HOSTS = frozenset({
    "huggingface.co", "hf.co",
    "cdn-lfs.huggingface.co", "cdn-lfs-us-1.huggingface.co", "cdn-lfs-eu-1.huggingface.co",
    "cdn-lfs.hf.co", "cdn-lfs-us-1.hf.co", "cdn-lfs-eu-1.hf.co",
    "cas-bridge.xethub.hf.co", "transfer.xethub.hf.co", "transfer.xethub-eu.hf.co",
})
HF_CDN_SUFFIX = ".cdn.hf.co"
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class RedirectRefused(Exception):
    """A redirect a fetch did not follow: `reason` names the host and why, quoting nothing else."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _host(url: str) -> str | None:
    """The host name of `url`, lower case, without a final dot; None when it is not a valid one
    (then it is never shown: it is text of the server's answer)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises on a port that is not a number)
        host = (parts.hostname or "").rstrip(".")
    except ValueError:
        return None
    if _ip(host) is not None:
        return host
    label = r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?"
    if len(host) <= 253 and re.fullmatch(rf"{label}(\.{label})*", host):
        return host
    return None


def _ip(text: str):
    try:
        return ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None


def _port(parts) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


def _origin(url: str) -> tuple[str, str | None, int]:
    parts = urlsplit(url)
    return parts.scheme, _host(url), _port(parts)


def redirect_hosts() -> list[str]:
    """The hosts FAULTLINE_REDIRECT_HOSTS allows (comma-separated names; `*.example.com`: its subdomains)."""
    return [h.strip().lower().rstrip(".") for h in os.environ.get(REDIRECT_HOSTS_ENV, "").split(",") if h.strip()]


def _listed(host: str, entries: list[str]) -> bool:
    return any(host == e or (e.startswith("*.") and host.endswith(e[1:])) for e in entries)


def _is_s3_endpoint(host: str | None) -> bool:
    """An Amazon S3 endpoint (bucket.s3.REGION.amazonaws.com, s3-REGION..., s3.dualstack...), not
    any name under amazonaws.com (an EC2 instance's public name is one too)."""
    return bool(host) and host.endswith((".amazonaws.com", ".amazonaws.com.cn")) and any(
        label == "s3" or label.startswith("s3-") for label in host.split("."))


def _service_host(spec: str, origin_host: str | None, host: str) -> bool:
    """Whether `host` is one the store's service sends its files from."""
    if spec.startswith("hf://"):
        return host in HF_HOSTS or host.endswith(HF_CDN_SUFFIX)
    if spec.startswith("s3://") and _is_s3_endpoint(origin_host):
        return _is_s3_endpoint(host)  # S3 redirects to the bucket's region (301, 307)
    return False


def _is_loopback_host(host: str | None) -> bool:
    ip = _ip(host or "")
    return host == "localhost" or (ip is not None and ip.is_loopback)


def _address_refusal(text: str, own: set) -> str | None:
    """None when a redirect may connect to address `text`: a public one, or the store host's own
    (`own`: the address its first request connected to); else what kind of address it is."""
    ip = _ip(text)
    if ip is None:
        return "an address that is not an IP address"
    if ip in own:
        return None
    if ip.version == 6:
        inner = ip.ipv4_mapped or ip.sixtofour or (
            ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF) if ip in _NAT64 else None)
        if inner is not None:
            if inner in own:
                return None
            ip = inner
    for kind, name in (("is_unspecified", "an unspecified address"),
                       ("is_loopback", "a loopback address other than the store host's own"),
                       ("is_link_local", "a link-local address"), ("is_multicast", "a multicast address"),
                       ("is_private", "a private address"), ("is_reserved", "a reserved address")):
        if getattr(ip, kind):
            return name
    return None if ip.is_global else "an address that is not public"


def _address_refused(host: str, kind: str) -> str:
    how = "it is" if _ip(host) is not None else "it resolves to"
    return (f"the redirect to host {host} was refused: {how} {kind}, which no redirect may reach "
            "(to read a store there, give its own URL)")


def redirect_refusal(spec: str, origin: str, current: str, target: str, own: set = frozenset()) -> str | None:
    """Why the fetch of `spec` (first asked of `origin`) does not follow a redirect from `current`
    to `target`, or None when it does (the address it then connects to is checked too, `_connect`).

    Followed: to the store's own host (same scheme, host and port; http to https of the same host;
    any port of a loopback host the store is on), to a host in FAULTLINE_REDIRECT_HOSTS, or to one
    the store's service sends files from (the Hugging Face Hub's CDN for hf://, another S3 endpoint
    for s3:// on Amazon S3). Never from https to http, never to an address that is not public
    (unless it is the store host's own). The reason names the host and nothing else of the answer."""
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https"):
        return "the redirect to an address that is not HTTP or HTTPS was refused"
    host = _host(target)
    if host is None:
        return "the redirect to an address without a valid host name was refused"
    if urlsplit(current).scheme == "https" and parts.scheme == "http":
        return f"the redirect to host {host} was refused: it leaves HTTPS for plain HTTP"
    if _ip(host) is not None:
        kind = _address_refusal(host, set(own))
        if kind is not None:
            return _address_refused(host, kind)
    o = urlsplit(origin)
    origin_host = _host(origin)
    if host == origin_host and ((parts.scheme == o.scheme and _port(parts) == _port(o))
                                or (o.scheme == "http" and parts.scheme == "https") or _is_loopback_host(host)):
        return None
    if _listed(host, redirect_hosts()) or _service_host(spec, origin_host, host):
        return None
    what = "another port or scheme of the store's host" if host == origin_host else "not the store's host"
    return (f"the redirect to host {host} was refused: it is {what}, nor a host its service is known to "
            f"send files from (to follow it, add {host} to {REDIRECT_HOSTS_ENV})")


class _Route:
    """The hops of one fetch: the store host's own addresses, which a redirect may come back to."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.own: set = set()


def _connect(route: _Route, host: str | None, redirected: bool, address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
             source_address=None, **_):
    """http.client's socket.create_connection for one hop: after a redirect, resolve the name once
    and connect only to an address `_address_refusal` accepts, then check the address connected
    to; the first hop's address becomes the store host's own. A connection to a proxy (its own
    name, not the hop's) is not checked here: `_through_proxy` checked the hop's name."""
    name, port = address
    direct = (name or "").lower().rstrip(".").strip("[]") == host
    check = redirected and direct
    candidates, refused = [], None
    for family, kind, proto, _, sockaddr in socket.getaddrinfo(name, port, 0, socket.SOCK_STREAM):
        why = _address_refusal(sockaddr[0], route.own) if check else None
        if why is None:
            candidates.append((family, kind, proto, sockaddr))
        elif refused is None:
            refused = why
    if not candidates:
        if refused is not None:
            raise RedirectRefused(_address_refused(host, refused))
        raise OSError(f"no address found for {name}")
    error: OSError | None = None
    for family, kind, proto, sockaddr in candidates:
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            peer = sock.getpeername()[0]
        except OSError as exc:
            sock.close()
            error = exc
            continue
        if check and (why := _address_refusal(peer, route.own)) is not None:
            sock.close()
            raise RedirectRefused(_address_refused(host, why))
        if direct and not redirected and (ip := _ip(peer)) is not None:
            route.own.add(getattr(ip, "ipv4_mapped", None) or ip)
        return sock
    raise error


class _GuardedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, hop: tuple, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = functools.partial(_connect, *hop)


class _GuardedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, hop: tuple, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = functools.partial(_connect, *hop)


class _GuardedHTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(functools.partial(_GuardedHTTPConnection, req.faultline_hop), req)


class _GuardedHTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        extra = {"context": self._context}
        if getattr(self, "_check_hostname", None) is not None:
            extra["check_hostname"] = self._check_hostname
        return self.do_open(functools.partial(_GuardedHTTPSConnection, req.faultline_hop), req, **extra)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """urllib follows no redirect: `_open` does, checking each one before it connects."""

    def http_error_302(self, req, fp, code, msg, headers):
        return None

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


_OPENER = urllib.request.build_opener(_NoRedirects, _GuardedHTTPHandler, _GuardedHTTPSHandler)


def _through_proxy(route: _Route, url: str, host: str) -> None:
    """A hop through a proxy (https_proxy, ...) is resolved by the proxy, out of `_connect`'s
    sight: refuse it when the name resolves here to an address a redirect may not reach."""
    scheme = urlsplit(url).scheme
    if scheme not in urllib.request.getproxies() or urllib.request.proxy_bypass(host):
        return
    if not route.own:
        with contextlib.suppress(OSError):
            route.own.update(_ip(i[4][0]) for i in socket.getaddrinfo(_host(route.origin), None))
    try:
        found = {i[4][0] for i in socket.getaddrinfo(host, None)}
    except OSError:
        return  # the proxy may know it; it answers for itself
    for address in sorted(found):
        if (why := _address_refusal(address, route.own)) is not None:
            raise RedirectRefused(_address_refused(host, why))


def _next_url(current: str, location: str) -> str:
    """Where a redirect goes: the Location resolved against `current`, made a plain request
    target (no user info, no fragment; unsafe characters quoted, as urllib does)."""
    target = urljoin(current, quote(location.strip(), safe=string.punctuation))
    parts = urlsplit(target)
    host = _host(target)
    if host is None or parts.scheme not in ("http", "https"):
        return target  # refused by redirect_refusal, never requested
    netloc = f"[{host}]" if ":" in host else host
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def _open(req: Request, known: Source | None, timeout: float, spec: str | None = None):
    """GET `req.url`, following redirects as `redirect_refusal` allows (RedirectRefused when it
    does not); a credential goes to the store's own origin only."""
    conditional: dict[str, str] = {}
    if known is not None:
        if known.etag:
            conditional["If-None-Match"] = known.etag
        if known.last_modified:
            conditional["If-Modified-Since"] = known.last_modified
    route = _Route(req.url)
    url, seen = req.url, {req.url: 1}
    for hop in range(MAX_REDIRECTS + 1):
        headers = {**req.headers, **conditional}
        if req.sign_s3 is not None:
            access, secret, token, region = req.sign_s3
            headers.update(sigv4_headers("GET", url, access, secret, token, region, datetime.now(timezone.utc)))
            # S3 sends the object's SHA-256 (when it was uploaded with one) only when asked
            headers["x-amz-checksum-mode"] = "ENABLED"
        if _origin(url) != _origin(req.url):  # another origin: no credential, no Host of the store's
            headers = {k: v for k, v in headers.items() if k.lower() in _CARRIED}
        r = urllib.request.Request(url, headers=headers, method="GET")
        r.faultline_hop = (route, _host(url), hop > 0)
        try:
            return _OPENER.open(r, timeout=timeout)
        except urllib.error.HTTPError as exc:
            location = exc.headers.get("Location") if exc.code in _REDIRECTS else None
            if not location or hop == MAX_REDIRECTS:
                raise
            exc.close()
            target = _next_url(url, location)
            seen[target] = seen.get(target, 0) + 1
            if seen[target] > MAX_REPEATS:
                raise exc from None  # a loop: said as one (`_fetch`)
            why = redirect_refusal(spec or req.url, req.url, url, target, route.own)
            if why is not None:
                raise RedirectRefused(why) from None
            _through_proxy(route, target, _host(target))
            url = target
    raise AssertionError("unreachable")


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
    note: str | None = None  # why the copy may be stale (the server was unreachable, a fetch is running)
    sha256: str | None = None  # of the file as published (what a published checksum is compared with)

    def line(self) -> str:
        text = f"data from {self.source} (read-only copy fetched {_ago(self.fetched_at)}"
        text += f", confirmed {_ago(self.checked_at)})" if self.checked_at != self.fetched_at else ")"
        return text


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") + " UTC"


def _ago(stamp: str) -> str:
    """`2026-01-02 10:00:00 UTC, 5 min ago`: when, and how old that is now."""
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return _when(stamp)
    seconds = max((datetime.now(timezone.utc).replace(tzinfo=None) - then).total_seconds(), 0)
    if seconds < 90:
        age = f"{seconds:.0f} s ago"
    elif seconds < 90 * 60:
        age = f"{seconds / 60:.0f} min ago"
    elif seconds < 36 * 3600:
        age = f"{seconds / 3600:.1f} h ago"
    else:
        age = f"{seconds / 86400:.1f} days ago"
    return f"{_when(stamp)}, {age}"


_memo: dict[str, tuple[float, Source]] = {}
_guard = threading.Lock()
_noted: set[tuple[str, str]] = set()


def _stamp() -> str:
    return datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")


def _paths(spec: str) -> tuple[Path, Path, Path]:
    name = Path(urlsplit(spec).path).name if not spec.startswith(MOTHERDUCK) else spec[3:].split("?", 1)[0]
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "store"
    # the query and fragment are part of the identity (a presigned URL names the object, a pinned
    # checksum names its content) but never of the name
    digest = hashlib.sha256(spec.split("?", 1)[0].split("#", 1)[0].encode()).hexdigest()[:16]
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
def _flocked(lock_path: Path) -> Iterator[None]:
    """One fetch of a store at a time across processes (held by the fetch, never by a page)."""
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


# ------------------------------------------------------------------ fetching, off the pages' path


@dataclass
class Fetch:
    """One download (or revalidation) of a store, running in a thread of its own."""

    spec: str
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=lambda: _stamp())
    received: int = 0
    expected: int | None = None
    done: threading.Event = field(default_factory=threading.Event)
    result: Source | None = None
    error: BaseException | None = None
    # the fetch of the same store before this one, when it failed: /healthz reports it while
    # this one runs (a new fetch must not hide that the last one failed)
    previous: Fetch | None = None

    def failure(self) -> str | None:
        """Why this fetch, once ended, did not confirm the copy (one line); None when it did."""
        if not self.done.is_set():
            return None
        if self.error is not None:
            return _error_line(self.error)
        return self.result.note if self.result is not None else None

    def progress(self) -> str:
        took = time.monotonic() - self.started
        got = f"{self.received:,} of {self.expected:,} bytes" if self.expected else f"{self.received:,} bytes"
        text = f"running for {took:.0f} s, {got} so far"
        if took > _env_float(TIMEOUT_ENV, DEFAULT_TIMEOUT_S):
            deadline = _env_float(DEADLINE_ENV, DEFAULT_DEADLINE_S)
            text += f"; slow or stuck: it is stopped at {deadline:g} s ({DEADLINE_ENV})"
        return text


_running: dict[str, Fetch] = {}
# How long a page waits for a fetch: None (a command) waits for it to end (its deadline bounds
# that); the app sets the page's query deadline (ui/data.py), and waits only briefly when a
# verified copy is there to show instead.
_page_wait: float | None = None
PAGE_WAIT_WITH_COPY_S = 2.0


def serve_pages(max_wait: float) -> None:
    """Called by the app: a page waits at most `max_wait` s for a store it has no copy of, and
    PAGE_WAIT_WITH_COPY_S for a newer copy of one it has; the fetch goes on in its thread."""
    global _page_wait
    _page_wait = max_wait


def fetching(spec: str) -> Fetch | None:
    """The fetch of `spec` running in this process, if any (what the app's health note shows)."""
    found = _running.get(spec)
    return None if found is None or found.done.is_set() else found


def _start(spec: str) -> Fetch:
    """A new fetch of `spec` (called under `_guard`), remembering the last one when it failed."""
    last = _running.get(spec)
    found = _running[spec] = Fetch(spec)
    if last is not None and last.failure() is not None:
        last.previous = None  # one back is enough
        found.previous = last
    threading.Thread(target=_run, args=(found,), daemon=True, name="faultline-remote-fetch").start()
    return found


def _begin(spec: str) -> Fetch:
    with _guard:
        found = _running.get(spec)
        if found is None or found.done.is_set():
            found = _start(spec)
        return found


def _begin_if_due(spec: str, ttl: float) -> None:
    """Start a fetch of `spec` unless one is running, one started less than `ttl` seconds ago, or
    a check ended less than `ttl` seconds ago: at most one fetch per TTL, however often asked."""
    with _guard:
        last, hit, now = _running.get(spec), _memo.get(spec), time.monotonic()
        if last is not None and (not last.done.is_set() or now - last.started < ttl):
            return
        if hit is not None and now - hit[0] < ttl:
            return
        _start(spec)


def _run(fetch: Fetch) -> None:
    try:
        spec = fetch.spec
        copy, meta_path, lock_path = _paths(spec)
        with _flocked(lock_path):
            known = _load_meta(meta_path, copy)
            if known is not None and known.checked_at > fetch.started_at:
                found = known  # another process confirmed it while this one waited for the lock
            elif spec.startswith(MOTHERDUCK):
                found = _motherduck(spec, copy, meta_path, known)
            else:
                found = _fetch(spec, copy, meta_path, known, fetch)
        _memo[spec] = (time.monotonic(), found)
        fetch.result = found
    except BaseException as exc:  # handed to whoever waits; a thread has nowhere else to say it
        fetch.error = exc
    finally:
        fetch.done.set()


def source(spec: str) -> Source:
    """The verified local copy of the store at `spec`, fetched or revalidated when the last check
    is older than FAULTLINE_REMOTE_TTL seconds.

    The fetch runs in a thread of its own, holding no lock a reader waits on: a command waits
    for it (FAULTLINE_REMOTE_DEADLINE bounds it); a page waits at most a moment when it has a
    verified copy to show meanwhile (saying how old it is and that a newer one is on its way),
    and at most its query deadline when it has none."""
    ttl = _env_float(TTL_ENV, DEFAULT_TTL_S)
    hit = _memo.get(spec)
    if hit is not None and time.monotonic() - hit[0] < ttl and Path(hit[1].copy).exists():
        return hit[1]
    copy, meta_path, _ = _paths(spec)
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RemoteStoreError(f"{copy.parent}: cannot create the cache folder for {display(spec)}: {exc.strerror} "
                               f"(set {CACHE_ENV} to a writable folder)") from None
    fetch = _begin(spec)
    known = _load_meta(meta_path, copy)
    if _page_wait is None:
        fetch.done.wait()
    else:
        # counted from the fetch's start: every page (and every call of one page) that finds it
        # running waits only for what is left of that time, never a full wait of its own
        limit = min(_page_wait, PAGE_WAIT_WITH_COPY_S) if known is not None else _page_wait
        fetch.done.wait(max(fetch.started + limit - time.monotonic(), 0))
    if not fetch.done.is_set():
        shown = display(spec)
        if known is None:
            raise RemoteStoreError(
                f"{shown}: the store is still being downloaded ({fetch.progress()}); it is shown as soon as "
                "it has arrived and been verified: reload this page in a moment")
        known.note = (f"{shown}: checking for a newer copy ({fetch.progress()}); showing the verified copy "
                      f"fetched {_ago(known.fetched_at)} meanwhile")
        return known  # not remembered: the next page load asks again
    if fetch.error is not None:
        raise fetch.error
    found = fetch.result
    if found.note and (spec, found.note) not in _noted:
        _noted.add((spec, found.note))
        notify(found.note)
    return found


def health(spec: str) -> dict:
    """What the hosted server's `/healthz` answers about the store at `spec` (serve.py): whether
    pages have a verified copy to show, how old it is, and whether its refresh is stuck or failed.

    Never waits, and starts at most one fetch per FAULTLINE_REMOTE_TTL (`_begin_if_due`): when no
    fetch of the store started, and no check ended, within the TTL it starts one in the background
    (as a page would), so a probe alone keeps finding out that the server went away; a probe
    within the TTL answers from what the last fetch found. `status` is `ok`, `degraded` (pages
    show the verified copy, but its refresh is slow or stuck past FAULTLINE_REMOTE_TIMEOUT, the
    last one failed, or the copy was last confirmed longer ago than FAULTLINE_REMOTE_TTL +
    FAULTLINE_REMOTE_TIMEOUT) or `unavailable` (no verified copy to show). Nothing here names a
    server path (`no_paths`) or a secret: the URL is shown as `display` shows it."""
    ttl = _env_float(TTL_ENV, DEFAULT_TTL_S)
    timeout = _env_float(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)
    shown = display(spec)
    copy, meta_path, _ = _paths(spec)
    problems: list[str] = []
    if not spec.startswith(MOTHERDUCK):
        try:
            copy.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # said without the folder: /healthz is as public as the pages
            problems.append(f"the cache folder ({CACHE_ENV}) cannot be created: {exc.strerror}")
        else:
            _begin_if_due(spec, ttl)
    fetch = _running.get(spec)
    known = _load_meta(meta_path, copy)
    report: dict = {"store": shown, "copy": None, "fetch": None}
    age = None
    if known is not None:
        with contextlib.suppress(ValueError):
            age = max((datetime.now(timezone.utc).replace(tzinfo=None)
                       - datetime.fromisoformat(known.checked_at)).total_seconds(), 0.0)
        report["copy"] = {"fetched_at": known.fetched_at, "checked_at": known.checked_at,
                          "seconds_since_checked": None if age is None else round(age)}
    if fetch is not None and not fetch.done.is_set():
        took = time.monotonic() - fetch.started
        report["fetch"] = {"running": True, "seconds": round(took, 1), "bytes": fetch.received,
                           "expected_bytes": fetch.expected}
        if took > timeout:
            problems.append(f"{shown}: a fetch is slow or stuck ({fetch.progress()})")
        if fetch.previous is not None:  # its report stays until this one has ended
            problems.append(f"the last fetch failed: {fetch.previous.failure()}")
    elif fetch is not None:
        failure = fetch.failure()
        report["fetch"] = {"running": False, "ended": "failed" if fetch.error is not None else
                           "kept the last verified copy" if failure else "ok"}
        if failure:
            problems.append(failure)
    limit = ttl + timeout
    # checked_at is to the second (a copy confirmed at 10:00:00.9 says 10:00:00): older by more
    # than the second it may have lost
    if age is not None and age - 1 > limit and not spec.startswith(MOTHERDUCK):
        problems.append(f"{shown}: the verified copy was last confirmed {round(age)} s ago, more than the "
                        f"{limit:g} s that {TTL_ENV} + {TIMEOUT_ENV} allow")
    if known is None:
        problems.append(f"{shown}: no verified copy yet, so pages cannot show the store")
    report["status"] = "unavailable" if known is None else ("degraded" if problems else "ok")
    report["problems"] = [no_paths(p) for p in problems]
    return report


# a folder of this machine as a message may carry one (an OSError's file name, DuckDB's errors):
# absolute, not part of a URL (after "scheme:" or a host)
_SERVER_FOLDER = re.compile(r"(?<![\w:/.~-])/(?:[^\s\"'`/]*/)*")


def no_paths(text: str) -> str:
    """`text` without a path of this machine: the cache folder, and every other absolute path
    cut to its last name (as pages in read-only mode show messages)."""
    folders = {str(cache_dir())}
    with contextlib.suppress(OSError):
        folders.add(str(cache_dir().resolve()))
    for folder in sorted((f for f in folders if len(f) > 1), key=len, reverse=True):
        # the folder (which may hold a space) as the root, then cut with the rest of the path
        text = re.sub(r"(?<![\w:/.~-])" + re.escape(folder.rstrip("/")) + r"(?=/|$|[\s\"'`),;])", "/", text)
    return _SERVER_FOLDER.sub("", text)


def _error_line(exc: BaseException) -> str:
    """A failed fetch's error in one line: its user-facing message when it has one."""
    return _one_line(getattr(exc, "message", None) or exc)


def local_copy(spec: str) -> Path:
    return Path(source(spec).copy)


def _redact(text: str, secrets: tuple[str, ...]) -> str:
    for s in secrets:
        if s:
            text = text.replace(s, "[redacted]")
    return text


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text or type(value).__name__




# ------------------------------------------------------------------ one download


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (one of another user counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


PART_PREFIX = ".part-"


def remove_abandoned_parts(folder: Path) -> list[Path]:
    """Remove the partial downloads of fetches that were killed (their process is gone); return
    them. A part names its process (`.part-<pid>-…`); an older unnamed one is removed once it
    is older than a day."""
    gone = []
    for part in folder.glob(f"{PART_PREFIX}*"):
        pid = part.name[len(PART_PREFIX):].split("-", 1)[0]
        try:
            stale = (not alive(int(pid))) if pid.isdigit() and int(pid) != os.getpid() else (
                not pid.isdigit() and time.time() - part.stat().st_mtime > 86400)
            if stale:
                part.unlink()
                gone.append(part)
        except OSError:
            pass
    return gone


def _part(folder: Path, suffix: str = ".duckdb") -> Path:
    fd, name = tempfile.mkstemp(dir=folder, prefix=f"{PART_PREFIX}{os.getpid()}-", suffix=suffix)
    os.close(fd)
    return Path(name)


def _remove(path: Path) -> None:
    for leftover in (path, path.with_name(path.name + ".wal"), path.with_name(path.name + ".wal.checkpoint")):
        leftover.unlink(missing_ok=True)


class _Deadline:
    """Shuts the response's socket down when the whole download's time is up: a server that
    trickles bytes answers every read in time and would otherwise hold the fetch for ever."""

    def __init__(self, resp, seconds: float) -> None:
        self.fired = False
        self._resp = resp
        self._timer = threading.Timer(max(seconds, 0), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        import socket

        self.fired = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            dup = socket.socket(fileno=os.dup(self._resp.fileno()))
            try:
                dup.shutdown(socket.SHUT_RDWR)
            finally:
                dup.close()

    def cancel(self) -> None:
        self._timer.cancel()


def _fetch(spec: str, copy: Path, meta_path: Path, known: Source | None, fetch: Fetch) -> Source:
    shown = display(spec)
    req = http_request(spec)
    timeout = _env_float(TIMEOUT_ENV, DEFAULT_TIMEOUT_S)
    deadline_s = _env_float(DEADLINE_ENV, DEFAULT_DEADLINE_S)
    ends = time.monotonic() + deadline_s
    now = _stamp()
    remove_abandoned_parts(copy.parent)
    try:
        resp = _open(req, known, max(min(timeout, deadline_s), 0.1), spec)
    except RedirectRefused as exc:
        return _unreachable(shown, known, exc.reason)
    except urllib.error.HTTPError as exc:
        if exc.code == 304 and known is not None:
            known.checked_at = now
            _write_meta(meta_path, known)
            return known
        reason = f"the server answered HTTP {exc.code} {_one_line(exc.reason)}"
        if 300 <= exc.code < 400:
            # a redirect that loops (or has nowhere to go): `_open` gives up on it
            return _unreachable(shown, known, f"the server redirects in a loop or nowhere (HTTP {exc.code})")
        if exc.code >= 500 or exc.code == 429:
            return _unreachable(shown, known, reason)
        hint = {401: "; give credentials in the environment (see docs/hosting.md)",
                403: "; the object is private or the credentials lack access (see docs/hosting.md)",
                404: "; check the URL"}.get(exc.code, "")
        raise RemoteStoreError(_redact(f"{shown}: cannot read the store: {reason}{hint}", req.secrets)) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        cause = getattr(exc, "reason", exc)
        return _unreachable(shown, known, _redact(f"the server could not be reached ({_one_line(cause)})", req.secrets))
    with resp:
        kind = (resp.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if kind in ("text/html", "application/xhtml+xml"):
            return _unreachable(shown, known, f"the server answered with a web page ({kind}), not the store file "
                                              "(a login page, an error page or a wrong link?)")
        max_bytes = int(_env_float(MAX_BYTES_ENV, DEFAULT_MAX_BYTES))
        length = resp.headers.get("Content-Length")
        fetch.expected = int(length) if length and length.isdigit() else None
        if fetch.expected is not None and fetch.expected > max_bytes:
            raise RemoteStoreError(f"{shown}: the store is {fetch.expected:,} bytes, over the {max_bytes:,}-byte limit "
                                   f"({MAX_BYTES_ENV})")
        tmp = _part(copy.parent)
        rebuilt = tmp.with_name(tmp.name[:-len(".duckdb")] + ".verified.duckdb")
        try:
            got = _download(resp, tmp, shown, fetch, max_bytes, timeout, ends - time.monotonic())
            if isinstance(got, str):
                return _unreachable(shown, known, got)
            digests = got
            size = fetch.received
            if fetch.expected is not None and size != fetch.expected:
                return _unreachable(shown, known, f"the download ended after {size:,} of {fetch.expected:,} bytes")
            try:
                _check_published(spec, resp.headers, digests, shown)
                verify(tmp, shown, rebuilt)
            except RemoteStoreError as exc:
                return _refused(shown, known, exc)
            st = rebuilt.stat()
            meta = Source(source=shown, copy=str(copy), etag=resp.headers.get("ETag"),
                          last_modified=resp.headers.get("Last-Modified"), size=size, fetched_at=now,
                          checked_at=now, local_size=st.st_size, local_mtime_ns=st.st_mtime_ns,
                          sha256=digests["sha256"].hexdigest())
            os.replace(rebuilt, copy)
            _write_meta(meta_path, meta)
            _fsync_dir(copy.parent)
            return meta
        finally:
            _remove(tmp)
            _remove(rebuilt)


STALL_BYTES = 64 * 1024


def _download(resp, tmp: Path, shown: str, fetch: Fetch, max_bytes: int, timeout: float,
              seconds_left: float) -> dict | str:
    """Stream the body into `tmp`; the digests of what arrived, or why the download stopped.

    Reads return as soon as any bytes arrive (read1), so the deadline and the stall rule are
    checked as data trickles in: fewer than STALL_BYTES in FAULTLINE_REMOTE_TIMEOUT seconds is a
    stalled download, and the whole download may take FAULTLINE_REMOTE_DEADLINE seconds."""
    digests = {"sha256": hashlib.sha256(), "md5": hashlib.md5(usedforsecurity=False)}
    deadline = _Deadline(resp, seconds_left)
    window_start, window_bytes = time.monotonic(), 0
    try:
        with open(tmp, "wb") as out:
            while True:
                try:
                    chunk = resp.read1(CHUNK)
                except (OSError, ValueError, urllib.error.URLError, http.client.HTTPException) as exc:
                    if deadline.fired:
                        return _too_slow(fetch)
                    return f"the download broke off after {fetch.received:,} bytes ({_one_line(exc)})"
                if not chunk:
                    if deadline.fired:
                        return _too_slow(fetch)
                    break
                fetch.received += len(chunk)
                if fetch.received > max_bytes:
                    raise RemoteStoreError(f"{shown}: the store is over the {max_bytes:,}-byte limit "
                                           f"({MAX_BYTES_ENV}); nothing was kept")
                for d in digests.values():
                    d.update(chunk)
                out.write(chunk)
                now = time.monotonic()
                if now - window_start >= timeout:
                    if fetch.received - window_bytes < STALL_BYTES:
                        return (f"the download stalled: {fetch.received - window_bytes:,} bytes in the last "
                                f"{now - window_start:.0f} s ({fetch.received:,} in all; {TIMEOUT_ENV})")
                    window_start, window_bytes = now, fetch.received
            out.flush()
            os.fsync(out.fileno())
    finally:
        deadline.cancel()
    return digests


def _too_slow(fetch: Fetch) -> str:
    limit = _env_float(DEADLINE_ENV, DEFAULT_DEADLINE_S)
    got = f"{fetch.received:,} of {fetch.expected:,} bytes" if fetch.expected else f"{fetch.received:,} bytes"
    return f"the download took longer than {limit:g} s ({DEADLINE_ENV}) and was stopped after {got}"


def _published(spec: str, headers) -> list[tuple[str, str, str]]:
    """The checksums published for the file: (algorithm, expected hex digest, where it was given).

    From the URL (`#sha256=HEX`, as pip pins a download), FAULTLINE_DB_SHA256, and what the
    server sends: `Repr-Digest`/`Digest` (RFC 9530/3230: sha-256), S3's `x-amz-checksum-sha256`,
    Google Cloud Storage's `x-goog-hash` (md5), `Content-MD5`, and the Hugging Face Hub's
    `X-Linked-ETag` (the SHA-256 of a file kept in LFS)."""
    import base64
    import binascii
    import re

    out = []
    fragment = urlsplit(spec).fragment if "#" in spec else ""
    for part in fragment.split("&"):
        name, _, value = part.partition("=")
        if name.lower() == "sha256" and value:
            out.append(("sha256", value.lower(), "the URL's #sha256="))
    if os.environ.get(SHA256_ENV):
        out.append(("sha256", os.environ[SHA256_ENV].strip().lower(), SHA256_ENV))

    def b64(value: str) -> str | None:
        try:
            return base64.b64decode(value.strip().strip(":"), validate=True).hex()
        except (binascii.Error, ValueError):
            return None

    for header in ("Repr-Digest", "Digest"):
        for item in (headers.get(header) or "").split(","):
            name, _, value = item.strip().partition("=")
            if name.lower() in ("sha-256", "sha256") and b64(value):
                out.append(("sha256", b64(value), f"the server's {header} header"))
    if headers.get("x-amz-checksum-sha256") and b64(headers["x-amz-checksum-sha256"]):
        out.append(("sha256", b64(headers["x-amz-checksum-sha256"]), "S3's x-amz-checksum-sha256"))
    for item in (headers.get("x-goog-hash") or "").split(","):
        name, _, value = item.strip().partition("=")
        if name == "md5" and b64(value):
            out.append(("md5", b64(value), "the server's x-goog-hash"))
    if headers.get("Content-MD5") and b64(headers["Content-MD5"]):
        out.append(("md5", b64(headers["Content-MD5"]), "the server's Content-MD5"))
    linked = (headers.get("X-Linked-ETag") or "").strip('"W/ ')
    if re.fullmatch(r"[0-9a-f]{64}", linked):
        out.append(("sha256", linked, "the Hub's X-Linked-ETag"))
    return out


def _check_published(spec: str, headers, digests: dict, shown: str) -> None:
    for algorithm, expected, where in _published(spec, headers):
        got = digests[algorithm].hexdigest()
        if got != expected:
            raise RemoteStoreError(f"{shown}: the downloaded file does not match the {algorithm} checksum given by "
                                   f"{where} ({expected[:16]}…; the file's is {got[:16]}…)")


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
    known.note = (f"{shown}: {reason}; showing the copy fetched {_ago(known.fetched_at)} "
                  f"(last confirmed {_when(known.checked_at)}), which may be out of date")
    return known


def _refused(shown: str, known: Source | None, exc: RemoteStoreError) -> Source:
    """A download that failed verification never replaces the verified copy."""
    if known is None:
        raise exc
    reason = exc.message[len(shown) + 2:] if exc.message.startswith(f"{shown}: ") else exc.message
    known.note = (f"{shown}: the file now published was refused ({reason}); showing the verified copy fetched "
                  f"{_ago(known.fetched_at)}, which may be out of date")
    return known


def verify(path: Path, shown: str, rebuilt: Path) -> None:
    """Check a downloaded store in full and write the copy to read into `rebuilt`.

    Refused: anything but a DuckDB file holding Faultline's tables, a store whose schema objects
    are not the ones Faultline's migrations create (store/trust.py: it is untrusted input), and
    a file DuckDB cannot read to the end. The copy kept is DuckDB's rewrite of every table read
    from the download (COPY FROM DATABASE): every data block is read and its checksum checked on
    the way, and no block the reading did not touch (indexes, free space) survives into it. An
    older store is then brought to this Faultline's schema in the copy (the published file is
    untouched)."""
    from . import trust
    from .migrations import MIGRATIONS, migrate

    with open(path, "rb") as fh:
        head = fh.read(12)
    if head[8:12] != DUCKDB_MAGIC:
        if head.lstrip()[:1] == b"<":
            raise RemoteStoreError(f"{shown}: the server sent a web page or XML document, not a store file "
                                   "(a login page, an error page or a wrong link?)")
        raise RemoteStoreError(f"{shown}: not a DuckDB database file (it starts with {head[:12]!r})")
    _remove(rebuilt)
    try:
        con = trust.connect(str(rebuilt), read_only=False,
                            allowed_paths=[str(path.resolve()), str(path.resolve()) + ".wal"])
    except duckdb.Error as exc:
        raise RemoteStoreError(f"{shown}: cannot set up the copy: {_one_line(exc)}") from None
    try:
        try:
            con.execute(f"ATTACH '{_sql_literal(path.resolve())}' AS published (READ_ONLY)")
        except duckdb.Error as exc:
            raise RemoteStoreError(f"{shown}: not a complete, readable DuckDB database ({_one_line(exc)})") from None
        tables = {r[0] for r in con.execute(
            "SELECT table_name FROM system.main.duckdb_tables() WHERE database_name = 'published'").fetchall()}
        missing = [t for t in REQUIRED_TABLES if t not in tables]
        if missing:
            raise RemoteStoreError(f"{shown}: a DuckDB file, but not a Faultline store (no {', '.join(missing)} table); "
                                   "publish a store written by `python -m ingest`")
        try:
            # read only once nothing of the download can run when read (store/trust.py)
            done = trust.trusted_migrations(con, shown, database="published")
            current = trust.current_database(con)
            con.execute(f'COPY FROM DATABASE published TO "{current}"')
            con.execute("DETACH published")
        except StoreError as exc:
            raise RemoteStoreError(exc.message) from None
        except duckdb.Error as exc:
            raise RemoteStoreError(f"{shown}: the file is damaged: DuckDB cannot read all of it ({_one_line(exc)})") from None
        try:
            if [n for n, _ in MIGRATIONS if n not in done]:
                migrate(con)
            con.execute("CHECKPOINT")
        except StoreError as exc:
            raise RemoteStoreError(f"{shown}: {exc.message}") from None
        except duckdb.Error as exc:
            raise RemoteStoreError(f"{shown}: the store could not be brought to this Faultline's schema: "
                                   f"{_one_line(exc)}") from None
    finally:
        con.close()


def _sql_literal(path: Path) -> str:
    return str(path).replace("'", "''")


# ------------------------------------------------------------------ MotherDuck


def motherduck_available() -> str | None:
    """None when DuckDB's motherduck extension loads here, else why not (never downloading it:
    installing extensions is DuckDB's INSTALL, done once where its site can be reached)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    try:
        con.execute("LOAD motherduck")
    except duckdb.Error as exc:
        return str(exc).splitlines()[0]
    finally:
        con.close()
    return None


def snapshot(attach: str, target: Path, shown: str) -> None:
    """Copy a database DuckDB can attach (a MotherDuck database) into `target`, verified.

    The connection that copies needs the network (MotherDuck is reached through its extension),
    so it only copies, reading no view; the copy is then verified like a download (`verify`),
    from a connection that reaches nothing else."""
    raw = _part(target.parent)
    _remove(raw)
    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    try:
        con.execute("ATTACH ? AS src (READ_ONLY)", [attach])
        con.execute("ATTACH ? AS dst", [str(raw)])
        con.execute("COPY FROM DATABASE src TO dst")
        con.execute("DETACH dst")
    except duckdb.Error as exc:
        _remove(raw)
        raise RemoteStoreError(f"{shown}: cannot copy the database: {_one_line(exc)}") from None
    finally:
        con.close()
    try:
        verify(raw, shown, target)
    finally:
        _remove(raw)


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
    tmp = _part(copy.parent)
    now = _stamp()
    try:
        try:
            snapshot(spec, tmp, shown)
        except RemoteStoreError as exc:
            return _refused(shown, known, exc)
        st = tmp.stat()
        meta = Source(source=shown, copy=str(copy), size=st.st_size, fetched_at=now, checked_at=now,
                      local_size=st.st_size, local_mtime_ns=st.st_mtime_ns)
        os.replace(tmp, copy)
        _write_meta(meta_path, meta)
        return meta
    finally:
        _remove(tmp)
