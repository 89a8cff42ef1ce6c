"""Who&When failure logs: one JSON file per multi-agent run, `{question, question_ID, ground_truth,
history: [{role, name, content}], is_correct, mistake_agent, mistake_step, mistake_reason, ...}`.

A folder of them is one run; `question_ID` is the instance, `history` the transcript, one step
per entry (so Who&When's `mistake_step` is the step's `step_index`), the speaking agent its
`name` (the hand-crafted half puts the agent in `role`). Verdict: the file's `is_correct`
(`is_corrected` in the hand-crafted half). The files name no model: give --model. The human
labels (mistake agent, step and reason) are not read here: they are a reviewer's, not the harness's.

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Iterator

from core.names import question_hash
from core.numbers import whole_or_none
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Reference, Skipped

from .. import files
from ..errors import IngestError
from ..jsonio import expect, load_json
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript, content_text
from ..walk import files_by_folder, matching_files
from .agent import agent_run, binary_verdict_fields, check_unique, require, runs_by_folder
from .chat import ROLES

FORMAT = "who-when"
VERDICT = binary_verdict_fields("is_correct", "who&when is_correct", "the log's is_correct (true passes, false fails)")


# Who&When's keys beside `history`: its labels, or (when a file has none) its question and verdict;
# the hand-crafted half writes the verdict as `is_corrected`
VERDICT_KEYS = ("is_correct", "is_corrected")
LABEL = b'"mistake_agent"'
UNLABELLED = (b'"question_ID"', b'"ground_truth"')
VERDICTS = tuple(f'"{k}"'.encode() for k in VERDICT_KEYS)
TELLING = (LABEL, *UNLABELLED, *VERDICTS)
HEAD_BYTES = 1 << 16
# the keys follow the history, which can be long: a file whose head does not hold them is scanned
# this far for them (Who&When's logs are a few MB at most)
SCAN_BYTES = 64 << 20


def _is_log(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    head = files.head(path, HEAD_BYTES) or b""
    if head.lstrip()[:1] != b"{" or b'"history"' not in head:
        return False
    return _telling({k for k in TELLING if k in head}) or (
        len(head) == HEAD_BYTES and _telling(files.holds(path, TELLING, SCAN_BYTES)))


def _telling(found: set[bytes] | frozenset[bytes]) -> bool:
    return LABEL in found or (set(UNLABELLED) <= found and any(k in found for k in VERDICTS))


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_log))


def _groups(path: Path) -> dict[Path, list[Path]]:
    return files_by_folder(path, _is_log)


def count_runs(path: Path) -> int:
    return len(_groups(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    yield from runs_by_folder(path, _groups(path), lambda folder, logs: read_run(folder, logs, options),
                              "Who&When log")


def _order(path: Path) -> tuple:
    number = whole_or_none(path.stem)  # "²".isdigit() is True, int("²") raises
    return (0, number, "") if number is not None else (1, 0, path.stem)


def read_run(folder: Path, logs: list[Path], options: ReadOptions) -> ParsedRun:
    model = require(options.model, folder, "Who&When logs name no model", "--model NAME")
    hasher = hashlib.sha256()
    transcript = Transcript()
    instances, predictions, seen = [], [], {}
    for file in sorted(logs, key=_order):
        log = expect(load_json(file, hasher), dict, str(file))
        raw_id = log.get("question_ID")
        if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
            raise IngestError(f"{file}: question_ID: expected an id, found {type(raw_id).__name__}")
        iid = str(raw_id)
        check_unique(seen, (iid, 0), file, file)
        history = log.get("history")
        if not isinstance(history, list):
            raise IngestError(f"{file}: history: expected a list of messages, found {type(history).__name__}")
        for n, message in enumerate(history):
            where = f"{file}: history[{n}]"
            if not isinstance(message, dict):
                raise IngestError(f"{where}: expected a message object, found {type(message).__name__}")
            raw_role = message.get("role")
            role = ROLES.get(raw_role.lower(), None) if isinstance(raw_role, str) else None
            # the hand-crafted half names the agent in role
            agent = message.get("name") if isinstance(message.get("name"), str) else (raw_role if role is None else None)
            transcript.add(iid, 0, "message", where=where, role=role or "assistant", agent=agent,
                           text=content_text(message.get("content"), where), source_ref=f"history[{n}]")
        key = next((k for k in VERDICT_KEYS if k in log), VERDICT_KEYS[0])
        verdict = log.get(key)
        if not isinstance(verdict, bool):
            raise IngestError(f"{file}: {key}: expected true or false, found {verdict!r}")
        question = log.get("question") if isinstance(log.get("question"), str) else None
        truth = log.get("ground_truth")
        instances.append(InstanceRecord(
            instance_id=iid, raw_instance_id=iid, input_text=question, question_hash=question_hash(question),
            refs=[Reference(text=str(truth), correct=True)] if truth not in (None, "") else []))
        last = next((m.get("content") for m in reversed(history) if isinstance(m, dict) and isinstance(m.get("content"), str)), None)
        predictions.append(PredictionRecord(instance_id=iid, output_text=last, score=float(verdict), is_correct=verdict))
    return agent_run(fmt=FORMAT, key=str(folder.resolve()), path=folder, content_hash=hasher.hexdigest(), model=model,
                     dataset_raw="who&when", options=options, instances=instances, predictions=predictions,
                     transcript=transcript, verdict=VERDICT, settings={})


SOURCE = Source(FORMAT, looks_like, read, count_runs, "Who&When logs: .json with history and mistake_agent (anywhere in the file)")
