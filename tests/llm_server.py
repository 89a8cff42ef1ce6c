"""A real OpenAI-compatible chat server on 127.0.0.1 for tests and the benchmark.

It answers `/v1/chat/completions` with scripted JSON: a stage-1 analysis whose title depends on
the failed output (or ErrorMap's empty "no error" answer where `no_error` says so), a stage-3
batch that classifies every title it is sent, names for the clusters `taxonomy discover` sends,
or a verifier's verdict (rejecting REJECTED_TITLES). Faults are queued per purpose ("analysis" /
"classification" / "discovery" / "verification") and consumed by the next requests of that purpose:
401 (quoting the key, as providers do), 429 with Retry-After, 500, a slow answer, truncated JSON, an unknown category, a batch answer
missing a title. Every request it receives is recorded, so tests can count and inspect them.

Fault "cut_off" is truncated JSON with finish_reason "length", as when an answer reaches max_tokens.

Agent transcripts ("transcript": the first-error prompt, schema `first_error`): `transcript_steps(body)`
reads the numbered steps a request shows; the answer comes from `first_error(steps, body)` when the
test gives one, else it names the first step with an error (else the last step), its agent and the
first line of its text. Faults "bad_step" (a step outside those shown), "bad_quote" (a quote that
is not in the step) and "bad_agent" (an agent the transcript does not name) spoil the next answer.
It also implements OpenAI's batch API (`/v1/files` upload and content, `/v1/batches` create,
retrieve, list) with JSONL in and out: each line of a batch is answered as the chat endpoint would
answer it (faults included) and billed once, when the batch is processed. Batches stay
`in_progress` while `hold_batches` is set (a test kills its client meanwhile) and are processed
on the first retrieve after `release_batches()`. `batch_lines` records every line billed.

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
from email.parser import BytesParser
from email.policy import HTTP
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
FAULTS = {"401", "429", "500", "slow", "truncated", "cut_off", "unknown_category", "missing_title", "bad_step",
          "bad_quote", "bad_agent"}
_STEP = re.compile(r'<step n="(\d+)"([^>]*)>\n(.*?)\n</step>', re.S)
_ATTR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*")')


def _purpose(body: dict) -> str:
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "")
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    if name == "name_clusters" or "GROUPS (JSON):" in text:
        return "discovery"
    if name == "analysis_verification" or "<analysis_under_review>" in text:
        return "verification"
    if name == "first_error" or "<transcript steps=" in text:
        return "transcript"
    if name:
        return "classification" if "classif" in name else "analysis"
    return "classification" if "TITLES TO CLASSIFY" in text else "analysis"


def failed_output_of(body: dict) -> str:
    """The failed output quoted in a stage-1 prompt (between its markers)."""
    text = body["messages"][-1]["content"]
    m = re.search(r"<failed_output>\n(.*?)\n</failed_output>", text, re.S)
    return m.group(1) if m else ""


def titles_of(body: dict) -> list[str]:
    """The titles a stage-3 request asks about (sent as {"error_title", "error_summary"} items)."""
    items = classify_items(body)
    return [i["error_title"] if isinstance(i, dict) else i for i in items]


def classify_items(body: dict) -> list:
    text = body["messages"][-1]["content"]
    m = re.search(r"TITLES TO CLASSIFY \(JSON\):\n(\[.*\])", text, re.S)
    return json.loads(m.group(1)) if m else []


def transcript_steps(body: dict) -> list[dict]:
    """The steps a first-error request shows: [{n, agent, role, kind, tool, body}] in order."""
    text = next(m["content"] for m in body["messages"] if m["role"] == "user")
    out = []
    for n, attrs, content in _STEP.findall(text):
        step = {"n": int(n), "body": content}
        step.update({k: json.loads(v) for k, v in _ATTR.findall(attrs)})
        out.append(step)
    return out


def default_first_error(steps: list[dict], body: dict) -> dict:
    """The first step with an error, else the last step; its agent (the one before it for a tool's
    result) and the first line of its text."""
    chosen = next((s for s in steps if "\nerror: " in "\n" + s["body"]), steps[-1])
    agent = chosen.get("agent")
    if chosen.get("kind") == "tool result":
        before = [s for s in steps if s["n"] < chosen["n"] and s.get("kind") != "tool result"]
        agent = before[-1].get("agent") if before else agent
    quote = next((line for line in chosen["body"].splitlines() if line.strip()), "")[:40]
    return {"first_error": {"step": chosen["n"], "agent": agent, "quote": quote, "category": "Tool Error Ignored",
                            "error_title": "Goes on after a failed step", "error_summary": "Scripted: the run went on."},
            "not_model_error": None}


def title_for(output: str) -> str:
    """The title the scripted analyst gives a failed output."""
    return TITLES[hashlib.sha256(output.encode()).digest()[0] % len(TITLES)]


def analysis_answer(body: dict, no_error=None) -> dict:
    """A title chosen by the failed output; ErrorMap's empty answer ("no error") when
    `no_error(output)` says so. Each answer quotes the output verbatim once and paraphrases once."""
    output = failed_output_of(body)
    criteria = [
        {"criterion": "Answers the request safely and correctly", "present_in_wrong": False, "quality": "incorrect",
         "evidence": output[:60], "comment": "scripted"},
        {"criterion": "Stays on the task", "present_in_wrong": True, "quality": "partially correct",
         "evidence": "a paraphrase the model never wrote", "comment": "scripted"},
    ]
    if no_error is not None and no_error(output):
        return {"required_criteria": criteria[:1], "final_answer": {"error_summary": "", "error_title": ""}}
    title = title_for(output)
    return {"required_criteria": criteria, "final_answer": {"error_summary": f"The model went wrong: {title.lower()}.", "error_title": title}}


# the scripted verifier rejects analyses with these titles and accepts every other analysis
REJECTED_TITLES = {"Misreads what the question asks", "Invents a source that does not exist"}


def verification_answer(body: dict) -> dict:
    text = body["messages"][-1]["content"]
    review = text.split("<analysis_under_review>\n", 1)[1]
    title = review.split("\n", 1)[0].removeprefix("error title: ")
    accepted = title not in REJECTED_TITLES
    return {"accepted": accepted, "reason": "scripted: " + ("the error is in the output" if accepted else "not the first error")}


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
                 no_error=None, send_usage: bool = True, first_error=None):
        self.latency = latency
        self.slow_seconds = slow_seconds
        self.retry_after = retry_after
        self.completion_tokens = completion_tokens
        self.honour_max_tokens = honour_max_tokens
        self.storm = storm
        self.no_error = no_error  # failed output -> True: the analyst finds no error (ErrorMap's empty answer)
        self.send_usage = send_usage
        self.first_error = first_error or default_first_error  # (steps, body) -> answer dict
        self._storm_rng = random.Random(11)
        self.requests: list[dict] = []
        self.statuses: list[int] = []
        self.times: list[float] = []
        self._faults: dict[str, deque] = {"analysis": deque(), "classification": deque(), "discovery": deque(),
                                          "verification": deque(), "transcript": deque()}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # the batch API
        self.hold_batches = False
        self.files: dict[str, dict] = {}
        self.batches: dict[str, dict] = {}
        self.batch_lines: list[dict] = []
        self.api_calls: list[tuple[str, str]] = []  # (method, path) of every files/batches call

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
            content = json.dumps(analysis_answer(body, self.no_error))
        elif purpose == "verification":
            content = json.dumps(verification_answer(body))
        elif purpose == "discovery":
            content = json.dumps(discovery_answer(body))
        elif purpose == "transcript":
            content = json.dumps(self._first_error_answer(body, fault))
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

    def _first_error_answer(self, body: dict, fault: str | None) -> dict:
        steps = transcript_steps(body)
        answer = self.first_error(steps, body)
        fe = answer.get("first_error")
        if fe is not None and fault in ("bad_step", "bad_quote", "bad_agent"):
            fe = dict(fe)
            if fault == "bad_step":
                fe["step"] = max(s["n"] for s in steps) + 7
            elif fault == "bad_quote":
                fe["quote"] = "words that step never says"
            else:
                fe["agent"] = "Nobody_In_This_Run"
            answer = {**answer, "first_error": fe}
        return answer

    # ------------------------------------------------------------ the batch API

    def release_batches(self) -> None:
        with self._lock:
            self.hold_batches = False

    def _file_object(self, fid: str) -> dict:
        f = self.files[fid]
        return {"id": fid, "object": "file", "bytes": len(f["data"]), "created_at": f["created_at"],
                "filename": f["filename"], "purpose": f["purpose"], "status": "processed"}

    def _new_file(self, data: bytes, filename: str, purpose: str) -> str:
        fid = f"file-{len(self.files) + 1}"
        self.files[fid] = {"data": data, "filename": filename, "purpose": purpose, "created_at": int(time.time())}
        return fid

    def _upload(self, content_type: str, raw: bytes) -> tuple[int, dict]:
        msg = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
        fields, data, filename = {}, None, "upload.jsonl"
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name == "file":
                data = part.get_payload(decode=True)
                filename = part.get_filename() or filename
            else:
                fields[name] = part.get_payload(decode=True).decode()
        if data is None:
            return 400, {"error": {"message": "no file"}}
        with self._lock:
            fid = self._new_file(data, filename, fields.get("purpose", "batch"))
            return 200, self._file_object(fid)

    def _create_batch(self, body: dict) -> tuple[int, dict]:
        with self._lock:
            if body.get("input_file_id") not in self.files:
                return 400, {"error": {"message": f"no such file {body.get('input_file_id')}"}}
            bid = f"batch_{len(self.batches) + 1}"
            lines = [ln for ln in self.files[body["input_file_id"]]["data"].decode().splitlines() if ln.strip()]
            self.batches[bid] = {
                "id": bid, "object": "batch", "endpoint": body.get("endpoint", "/v1/chat/completions"),
                "errors": None, "input_file_id": body["input_file_id"],
                "completion_window": body.get("completion_window", "24h"), "status": "in_progress",
                "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                "in_progress_at": int(time.time()), "completed_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
            }
            return 200, dict(self.batches[bid])

    def _process(self, batch: dict) -> None:
        """Answer every line of a held batch, once (called under the lock)."""
        lines = [json.loads(ln) for ln in self.files[batch["input_file_id"]]["data"].decode().splitlines() if ln.strip()]
        out, err = [], []
        for n, line in enumerate(lines):
            body = line["body"]
            purpose = _purpose(body)
            self._lock.release()
            try:
                status, _, data, _ = self._handle(body)
            finally:
                self._lock.acquire()
            item = {"id": f"batch_req_{batch['id']}_{n}", "custom_id": line["custom_id"],
                    "response": {"status_code": status, "request_id": f"req_{n}", "body": json.loads(data)},
                    "error": None}
            (out if status == 200 else err).append(item)
            if status == 200:
                self.batch_lines.append({"batch": batch["id"], "custom_id": line["custom_id"], "purpose": purpose,
                                         "body": body})
        if out:
            batch["output_file_id"] = self._new_file("".join(json.dumps(i) + "\n" for i in out).encode(), "out.jsonl", "batch_output")
        if err:
            batch["error_file_id"] = self._new_file("".join(json.dumps(i) + "\n" for i in err).encode(), "err.jsonl", "batch_output")
        batch["status"] = "completed"
        batch["completed_at"] = int(time.time())
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}

    def _batch_api(self, method: str, path: str, headers, raw: bytes) -> tuple[int, dict | bytes]:
        with self._lock:
            self.api_calls.append((method, path))
        parts = path.split("?", 1)[0].rstrip("/").split("/")
        i = parts.index("files") if "files" in parts else parts.index("batches")
        rest = parts[i + 1:]
        if parts[i] == "files":
            if method == "POST" and not rest:
                return self._upload(headers.get("Content-Type", ""), raw)
            with self._lock:
                if not rest or rest[0] not in self.files:
                    return 404, {"error": {"message": "no such file"}}
                if rest[1:] == ["content"]:
                    return 200, self.files[rest[0]]["data"]
                return 200, self._file_object(rest[0])
        if method == "POST" and not rest:
            return self._create_batch(json.loads(raw or b"{}"))
        with self._lock:
            if not rest:
                data = sorted(self.batches.values(), key=lambda b: b["created_at"], reverse=True)
                return 200, {"object": "list", "data": [dict(b) for b in data], "has_more": False}
            batch = self.batches.get(rest[0])
            if batch is None:
                return 404, {"error": {"message": "no such batch"}}
            if rest[1:] == ["cancel"]:
                batch["status"] = "cancelled"
            elif batch["status"] == "in_progress" and not self.hold_batches:
                self._process(batch)
            return 200, dict(batch)

    def __enter__(self) -> "FakeLLMServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body leave in two writes; with Nagle on, the body would wait for a
            # delayed ACK (~40 ms) and the test server, not the client, would set the pace
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def _send_batch_api(self, method: str, raw: bytes) -> None:
                status, payload = server._batch_api(method, self.path, self.headers, raw)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if isinstance(payload, bytes) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send_batch_api("GET", b"")

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                if "/files" in self.path or "/batches" in self.path:
                    self._send_batch_api("POST", raw)
                    return
                body = json.loads(raw or b"{}")
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
