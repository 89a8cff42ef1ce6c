"""Ingest and analysis started from the app run as their own processes (the same CLIs a user
types), so the app keeps reading the store between their short write sessions and a failed job
cannot take the app down. The registry lives in the server process and outlives reruns."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from core.errors import Ask
from core.result import RESULT_FILE, CommandResult, read_result

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Job:
    label: str
    command: list[str]
    log: Path
    proc: subprocess.Popen
    started: float = field(default_factory=time.time)
    args: list[str] = field(default_factory=list)  # the `python -m` arguments, to run it again with more
    discard: tuple[Path, ...] = ()  # upload folders this job's files live in, removed if it fails for good

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    @property
    def state(self) -> str:
        code = self.returncode
        return "running" if code is None else "done" if code == 0 else f"failed (exit {code})"

    def last_line(self) -> str:
        """The command's latest message (progress bars redraw with \\r: keep the last frame)."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        lines = [ln.rsplit("\r", 1)[-1].strip() for ln in text.splitlines()]
        return next((ln for ln in reversed(lines) if ln), "")

    def problem(self) -> str:
        """Why a failed job failed: the command's own last `error:` message, whole (its first line
        and the indented lines that continue it, one per dataset or file), else its last line."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""
        lines = text.splitlines()
        starts = [n for n, ln in enumerate(lines) if ln.startswith("error: ")]
        if not starts:
            return self.last_line()
        block = [lines[starts[-1]].removeprefix("error: ").rstrip()]
        for line in lines[starts[-1] + 1:]:
            if not line.startswith(" "):
                break
            block.append(line.rstrip())
        return "\n".join(block)

    def result(self) -> CommandResult | None:
        """What the command wrote as it exited (core/result.py); None while it runs, or when it
        wrote none (killed, or a command that writes none): then only its log says why."""
        return read_result(_result_file(self.log)) if self.returncode is not None else None

    def asks(self) -> tuple[Ask, ...]:
        """The settings a failed load stopped for; none when it said none, or said nothing."""
        result = self.result()
        return result.asks if result is not None else ()


def _result_file(log: Path) -> Path:
    """Where a job's command writes its outcome: beside its log."""
    return log.with_suffix(".result.json")


@st.cache_resource
def _registry() -> list[Job]:
    return []


def start(label: str, args: list[str], db: Path, discard_on_failure: tuple[Path, ...] = ()) -> Job:
    """Run `python -m <args>` against `db`, output to a log file beside the database.
    `discard_on_failure`: folders (an upload's) removed when the job fails, whoever watches it."""
    from .data import read_only

    if read_only():  # no control starts a job there; nothing may write a log either
        raise RuntimeError("a read-only app starts no jobs")
    logs = db.parent / "jobs"
    logs.mkdir(parents=True, exist_ok=True)
    # unique even for two sessions starting a job in the same second
    log = logs / f"{time.strftime('%Y%m%d-%H%M%S')}-{args[0]}-{uuid.uuid4().hex[:8]}.log"
    command = [sys.executable, "-m", *args, "--db", str(db)]
    # what the app needs of the outcome (the settings a load asks for) it reads from that file
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", RESULT_FILE: str(_result_file(log))}
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    job = Job(label, command, log, proc, args=list(args), discard=tuple(discard_on_failure))
    _registry().append(job)
    if discard_on_failure:
        threading.Thread(target=_discard_on_failure, args=(job,), daemon=True,
                         name="faultline-job-cleanup").start()
    return job


def _discard_on_failure(job: Job) -> None:
    """A load that failed keeps nothing of what was uploaded for it (the store has none of it) —
    unless it stopped only for a setting the page asks for (a scale, a threshold, a main metric):
    then the files stay for "Load again with these settings", whose job takes them over."""
    if job.proc.wait() != 0 and not job.asks():
        for folder in job.discard:
            shutil.rmtree(folder, ignore_errors=True)


def jobs() -> list[Job]:
    return list(_registry())


def running() -> bool:
    return any(j.returncode is None for j in _registry())
