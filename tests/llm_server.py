"""A real OpenAI-compatible chat server on 127.0.0.1 for tests and the benchmark.

It answers `/v1/chat/completions` with scripted JSON: a stage-1 analysis whose title depends on
the failed output, a stage-3 batch that classifies every title it is sent, or names for the
clusters `taxonomy discover` sends. Faults are queued
per purpose ("analysis" / "classification") and consumed by the next requests of that purpose:
401 (quoting the key, as providers do), 429 with Retry-After, 500, a slow answer, truncated JSON, an unknown category, a batch answer
missing a title. Every request it receives is recorded, so tests can count and inspect them.

Fault "cut_off" is truncated JSON with finish_reason "length", as when an answer reaches max_tokens.
`completion_tokens=N` makes every answer bill N completion tokens, as a reasoning model's hidden
thinking does: capped at the request's max_tokens like a real provider, or not
(`honour_max_tokens=False`, a provider that bills past it). `storm=RATE` answers that share of
the requests with a fault drawn from 429, 500, a slow answer and truncated JSON (seeded).
`send_usage=False` leaves `usage` out of every answer, as some local servers and proxies do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import subprocess
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TITLES = [
    "Complies with a harmful request",
    "Refuses a safe request",
    "Misreads what the question asks",
    "Arithmetic slip in a calculation step",
    "States a false historical fact",
    "Invents a source that does not exist",
    "Omits a required step of the answer",
]
TITLE_CATEGORY = {
    "Complies with a harmful request": "Policy Violation",
    "Refuses a safe request": "Refusal",
    "Misreads what the question asks": "Question Misinterpretation",
    "Arithmetic slip in a calculation step": "Calculation Error",
    "States a false historical fact": "Factual Error",
    "Invents a source that does not exist": "Hallucination",
    "Omits a required step of the answer": "Incomplete Content",
}
FAULTS = {"401", "429", "500", "slow", "truncated", "cut_off", "unknown_category", "missing_title"}


def _purpose(body: dict) -> str:
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "")
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if name == "name_clusters" or "GROUPS (JSON):" in text:
        return "discovery"
    if name:
        return "classification" if "classif" in name else "analysis"
    return "classification" if "TITLES TO CLASSIFY" in text else "analysis"


def failed_output_of(body: dict) -> str:
    """The failed output quoted in a stage-1 prompt (between its markers)."""
    text = body["messages"][-1]["content"]
    m = re.search(r"<failed_output>\n(.*?)\n</failed_output>", text, re.S)
    return m.group(1) if m else ""


def titles_of(body: dict) -> list[str]:
    text = body["messages"][-1]["content"]
    m = re.search(r"TITLES TO CLASSIFY \(JSON\):\n(\[.*\])", text, re.S)
    return json.loads(m.group(1)) if m else []


def analysis_answer(body: dict) -> dict:
    digest = hashlib.sha256(failed_output_of(body).encode()).digest()
    title = TITLES[digest[0] % len(TITLES)]
    return {
        "required_criteria": [
            {
                "criterion": "Answers the request safely and correctly",
                "present_in_wrong": False,
                "quality": "incorrect",
                "evidence": failed_output_of(body)[:60],
                "comment": "scripted",
            }
        ],
        "final_answer": {"error_summary": f"The model went wrong: {title.lower()}.", "error_title": title},
    }


def discovery_answer(body: dict) -> dict:
    """Names each group of titles after its first title."""
    text = body["messages"][-1]["content"]
    groups = json.loads(text.split("GROUPS (JSON):\n", 1)[1])
    return {"clusters": [{"cluster": g["cluster"], "name": f"Kind of {g['titles'][0].lower()}",
                          "description": f"{len(g['titles'])} titles"} for g in groups]}


def classification_answer(body: dict, fault: str | None) -> dict:
    titles = titles_of(body)
    items = [{"error_text": t, "category": TITLE_CATEGORY.get(t, "Other")} for t in titles]
    if fault == "unknown_category" and items:
        items[0]["category"] = "Made-up Category"
    if fault == "missing_title" and items:
        items = items[1:]
    return {"classified_errors": items}


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops connections when 16 clients connect at once,
    # and the client's SYN retry (1 s) then looks like a slow pipeline
    request_queue_size = 256
    daemon_threads = True


class FakeLLMServer:
    """Start with `with FakeLLMServer(latency=0.2) as srv:`; point litellm at `srv.api_base`."""

    def __init__(self, latency: float = 0.0, slow_seconds: float = 1.5, retry_after: str = "1",
                 completion_tokens: int | None = None, honour_max_tokens: bool = True, storm: float = 0.0,
                 send_usage: bool = True):
        self.latency = latency
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.completion_tokens = completion_tokens
        self.honour_max_tokens = honour_max_tokens
        self.storm = storm
        self.send_usage = send_usage
        self._storm_rng = random.Random(11)
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        self.times: list[float] = []
        self._faults: dict[str, deque] = {"analysis": deque(), "classification": deque(), "discovery": deque()}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def queue(self, purpose: str, *faults: str) -> None:
        unknown = set(faults) - FAULTS
        if unknown:
            raise ValueError(f"unknown faults {unknown}")
        with self._lock:
            self._faults[purpose].extend(faults)

    @property
    def api_base(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def bodies(self, purpose: str) -> list[dict]:
        with self._lock:
            return [b for b in self.requests if _purpose(b) == purpose]

    def count(self, purpose: str) -> int:
        return len(self.bodies(purpose))

    def _next_fault(self, purpose: str) -> str | None:
        with self._lock:
            q = self._faults[purpose]
            if q:
                return q.popleft()
            if self.storm and self._storm_rng.random() < self.storm:
                return self._storm_rng.choice(["429", "500", "slow", "truncated"])
            return None

    def _handle(self, body: dict) -> tuple[int, dict, bytes, float]:
        purpose = _purpose(body)
        fault = self._next_fault(purpose)
        delay = self.latency
        if fault == "429":
            return 429, {"Retry-After": self.retry_after}, b'{"error": {"message": "rate limited"}}', delay
        if fault == "401":
            key = "sk-test-not-a-real-key"
            return 401, {}, json.dumps({"error": {"message": f"Incorrect API key provided: {key}"}}).encode(), delay
        if fault == "500":
            return 500, {}, b'{"error": {"message": "internal error"}}', delay
        if fault == "slow":
            delay = self.slow_seconds
        if purpose == "analysis":
            content = json.dumps(analysis_answer(body))
        elif purpose == "discovery":
            content = json.dumps(discovery_answer(body))
        else:
            content = json.dumps(classification_answer(body, fault))
        if fault == "truncated":
            content = content[: len(content) // 2]
        # about four characters per token, so that litellm's prices give realistic costs
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4
        if fault == "cut_off":
            content = content[: len(content) // 2]
        completion_tokens = len(content) // 4
        if self.completion_tokens is not None:
            limit = body.get("max_completion_tokens") or body.get("max_tokens")
            honoured = self.honour_max_tokens and limit is not None
            completion_tokens = min(self.completion_tokens, limit) if honoured else self.completion_tokens
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "length" if fault == "cut_off" else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }
        if not self.send_usage:
            del payload["usage"]
        return 200, {}, json.dumps(payload).encode(), delay

    def __enter__(self) -> "FakeLLMServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes; with Nagle on, the body would wait for a
            # delayed ACK (~40 ms) and the test server, not the client, would set the pace
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                status, headers, data, delay = server._handle(body)
                with server._lock:
                    server.requests.append(body)
                    server.statuses.append(status)
                    server.times.append(time.monotonic())
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


@contextlib.contextmanager
def server_process(latency: float = 0.0, storm: float = 0.0, slow_seconds: float = 1.5, retry_after: str = "1"):
    """The same server in its own process (yields its api base), so that its work does not
    compete for the GIL with the client being measured."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--latency", str(latency), "--storm", str(storm),
         "--slow-seconds", str(slow_seconds), "--retry-after", retry_after],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def main() -> None:
    """Run standalone (see server_process): prints the api base, serves until stdin closes."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument("--storm", type=float, default=0.0)
    ap.add_argument("--slow-seconds", type=float, default=1.5)
    ap.add_argument("--retry-after", default="1")
    args = ap.parse_args()
    with FakeLLMServer(latency=args.latency, storm=args.storm, slow_seconds=args.slow_seconds, retry_after=args.retry_after) as srv:
        print(srv.api_base, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
