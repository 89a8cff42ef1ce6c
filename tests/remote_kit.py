"""A store served over HTTP, for the remote-store tests: graded rows and the bytes of a store
holding them, the environment of a command with a cache of its own, a command's accuracy of a
store at a URL, and how a hostile server answers (trickling, silent, cut short, served with
headers, a redirect loop, a damaged store)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import run_module

from tests.seed_store import seed


def graded_rows(n: int, correct_every: int, model: str = "m1") -> list[dict]:
    return [{"model": model, "dataset": "d", "instance_id": f"i{i}", "is_correct": i % correct_every == 0}
            for i in range(n)]


def store_of(path: Path, rows: list[dict]) -> bytes:
    seed(path, rows)
    return path.read_bytes()


def remote_env(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "HF_", "FAULTLINE_", "GOOGLE_", "STORAGE_EMULATOR"))}
    return {**env, "FAULTLINE_CACHE_DIR": str(tmp_path / "cache"), **extra}


def accuracy_of(db: str, env: dict):
    return run_module("stats", "accuracy", "--json", "--db", db, env=env)


def trickle(data: bytes, every: float, size: int = 1):
    """200 with the full Content-Length, then `size` bytes every `every` seconds."""
    def answer(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        for i in range(0, len(data), size):
            h.wfile.write(data[i:i + size])
            h.wfile.flush()
            time.sleep(every)
    return answer


def silent(h):
    time.sleep(30)  # accepts, reads the request, never answers


def cut_short(data: bytes):
    def answer(h):
        h.send_response(200)
        h.send_header("Connection", "close")  # no Content-Length: the end of the body is the close
        h.end_headers()
        h.wfile.write(data[: len(data) // 2])
        h.close_connection = True
    return answer


def served(data: bytes, headers: dict):
    def answer(h):
        h.send_response(200)
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
    return answer


def loop(h):
    h.send_response(302)
    h.send_header("Location", h.path)
    h.send_header("Content-Length", "0")
    h.end_headers()


def damaged_copy(good: bytes) -> bytes:
    """The store with one byte flipped in a data block (every block carries a checksum)."""
    data = bytearray(good)
    offset = 3 * 4096 + 2 * 262144 + 1000  # inside the third block after the headers
    assert len(data) > offset
    data[offset] ^= 0xFF
    return bytes(data)
