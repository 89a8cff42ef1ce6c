"""A real HTTP file server on 127.0.0.1 (or another loopback address) for the store-at-a-URL tests:
serves bytes per path with an ETag and Last-Modified, answers conditional GETs with 304, and
records every request (path, headers, status, when) and counts every connection it accepts, so
tests can count downloads, see what was sent, and that nothing connected at all."""

from __future__ import annotations

import hashlib
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class StoreServer:
    """`with StoreServer({"/s.duckdb": data}) as srv:` then `srv.url("/s.duckdb")`.

    `auth`: the Authorization header every request must carry (else 401). `special[path]`, when
    set, answers that path instead: a function of the request handler (a server that trickles,
    never answers, cuts a body short, redirects in a loop...)."""

    def __init__(self, files: dict[str, bytes] | None = None, auth: str | None = None, host: str = "127.0.0.1"):
        self.files: dict[str, tuple[bytes, str, str]] = {}
        self.auth = auth
        self.host = host
        self.connections = 0  # TCP connections accepted (a client that connects and sends nothing counts too)
        self.log: list[dict] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._version = 0
        self.special: dict = {}
        for path, data in (files or {}).items():
            self.put(path, data)

    def put(self, path: str, data: bytes) -> None:
        """Publish (or replace) a file: a new ETag and a later Last-Modified."""
        with self._lock:
            self._version += 1
            etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
            # one second per version, so that Last-Modified differs even within one second
            modified = formatdate(1_700_000_000 + self._version, usegmt=True)
            self.files[path] = (data, etag, modified)

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    @property
    def base(self) -> str:
        return self.url("")

    def statuses(self) -> list[int]:
        with self._lock:
            return [r["status"] for r in self.log]

    def __enter__(self) -> "StoreServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                special = server.special.get(self.path.split("?", 1)[0])
                if special is not None:
                    with server._lock:
                        server.log.append({"path": self.path, "headers": dict(self.headers.items()),
                                           "status": "special", "at": time.monotonic()})
                    try:
                        special(self)
                    except OSError:
                        pass  # the client went away
                    return
                with server._lock:
                    found = server.files.get(self.path.split("?", 1)[0])
                headers = {k: v for k, v in self.headers.items()}
                if server.auth is not None and self.headers.get("Authorization") != server.auth:
                    status, body, extra = 401, b"unauthorized", {}
                elif found is None:
                    status, body, extra = 404, b"not found", {}
                else:
                    data, etag, modified = found
                    extra = {"ETag": etag, "Last-Modified": modified}
                    if self.headers.get("If-None-Match") == etag:
                        status, body = 304, b""
                    else:
                        status, body = 200, data
                with server._lock:
                    server.log.append({"path": self.path, "headers": headers, "status": status,
                                       "at": time.monotonic()})
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                if status != 304:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if status != 304:
                    self.wfile.write(body)

        class Server(ThreadingHTTPServer):
            def process_request(self, request, client_address):
                with server._lock:
                    server.connections += 1
                super().process_request(request, client_address)

        self._httpd = Server((self.host, 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Take the server down (its port then refuses connections)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __exit__(self, *exc) -> None:
        self.stop()
