"""An agent's transcript written as a JSON array of chat messages, `[{role, content, name?,
tool_calls?, tool_call_id?}, ...]`, one file per task: how AgentRx keeps Magentic-One's logs and
how many chat exports are written.

A folder of them is one run, each file one instance (named by the file, without its suffix):
its messages are the transcript (read as chat.py reads messages), its first user message the
input, its last assistant message the output. The files name no model, no dataset and no
verdict: give --model and --dataset (a folder without them is skipped and named), and the
harness's verdicts with --verdicts (else the predictions are stored unscored).

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Iterator

from core.names import question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Skipped

from .. import files
from ..jsonio import expect, load_json
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript
from ..walk import files_by_folder, matching_files
from .agent import Verdicts, agent_run, binary_verdict_fields, check_unique, require, runs_by_folder
from .chat import add_messages, said

FORMAT = "messages"
# a message's own keys open the array: a list of records that hold messages (tau-bench's
# `[{task_id, …, traj: [...]}]`) starts with another key
FIRST_KEY = re.compile(rb'\[\s*\{\s*"(role|content)"\s*:')


def _is_transcript(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    head = (files.head(path, 1 << 16) or b"").lstrip()
    return bool(FIRST_KEY.match(head)) and b'"role"' in head


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_transcript))


def _groups(path: Path) -> dict[Path, list[Path]]:
    return files_by_folder(path, _is_transcript)


def count_runs(path: Path) -> int:
    return len(_groups(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    verdicts = Verdicts(options.verdicts)
    yield from runs_by_folder(path, _groups(path), lambda folder, logs: read_run(folder, logs, options, verdicts),
                              "transcript (a JSON array of messages)")


def read_run(folder: Path, logs: list[Path], options: ReadOptions, verdicts: Verdicts) -> ParsedRun:
    what = "transcripts written as a JSON array of messages name no"
    model = require(options.model, folder, f"{what} model", "--model NAME")
    dataset = require(options.dataset, folder, f"{what} dataset", "--dataset NAME")
    hasher = hashlib.sha256()
    transcript = Transcript()
    instances, predictions, seen = [], [], {}
    for file in sorted(logs):
        messages = expect(load_json(file, hasher), list, str(file))
        iid = file.stem
        check_unique(seen, (iid, 0), file, file)
        add_messages(transcript, iid, 0, messages, str(file), ref="")
        task = said(messages, "user", last=False)
        resolved, note = verdicts.get(iid)
        instances.append(InstanceRecord(instance_id=iid, raw_instance_id=iid, input_text=task,
                                        question_hash=question_hash(task)))
        predictions.append(PredictionRecord(instance_id=iid, output_text=said(messages, "assistant", last=True),
                                            score=None if resolved is None else float(resolved),
                                            is_correct=resolved, verdict_note=note))
    judged = sum(p.is_correct is not None for p in predictions)
    notes = [] if judged == len(predictions) else [
        f"{folder}: {len(predictions) - judged} of {len(predictions)} transcripts have no verdict (the files carry "
        "none): stored unscored; give the harness's verdicts with --verdicts FILE"]
    verdict = binary_verdict_fields("resolved", "--verdicts", verdicts.describe()) if judged else \
        binary_verdict_fields("resolved", "none", None)
    return agent_run(fmt=FORMAT, key=str(folder.resolve()), path=folder, content_hash=hasher.hexdigest(), model=model,
                     dataset_raw=dataset, options=options, instances=instances, predictions=predictions,
                     transcript=transcript, verdict=verdict, notes=notes, settings={})


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                "an agent's transcript: a .json array of chat messages ({role, content})")
