"""tau-bench results: `[{task_id, reward, info, traj: [messages], trial}]`, one file per run
(its `run.py` writes `{strategy}-{model}-{temperature}_range_{start}-{end}_user-...json`).

A record is one trial of one task: `task_id` is the instance, `trial` the trial index, `traj`
the transcript (the policy as system message, the simulated user, the agent's messages and tool
calls, the tools' results; a result tau-bench's environment wrote as "Error: …" or "Unknown action …"
is a tool error, `tool_error`). Verdict: tau-bench's own, reward 1 passes, any lower reward fails
(its pass^1 is the mean reward). The model is --model, else the one in tau-bench's file name;
the domain (airline, retail) is read from the policy that opens the transcript, and qualifies
task ids (they restart per domain).

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path
from typing import Iterator

import orjson

from core.names import question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Reference, Skipped

from .. import files
from ..errors import IngestError
from ..jsonio import expect, load_json
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript
from ..walk import matching_files
from .agent import agent_run, binary_verdict_fields, check_unique, each_or_skip, require
from .chat import add_messages

FORMAT = "tau-bench"
FILE_NAME = re.compile(r"^(?P<strategy>tool-calling|act|react|few-shot)-(?P<model>.+)-(?P<temperature>[0-9.]+)_range_")
POLICY_DOMAINS = (("# airline agent policy", "airline"), ("# retail agent policy", "retail"))
VERDICT = binary_verdict_fields("reward", "tau-bench reward", "tau-bench's reward: 1 passes, below 1 fails")


def _is_results(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    head = (files.head(path, 4096) or b"").lstrip()
    return head[:1] == b"[" and b'"task_id"' in head and b'"reward"' in head


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_results))


def count_runs(path: Path) -> int:
    return len(matching_files(path, _is_results)) if path.is_dir() else 1


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    files = matching_files(path, _is_results) if path.is_dir() else [path]
    yield from each_or_skip(path, files, lambda f: read_results(f, options), "tau-bench results file")


def read_results(path: Path, options: ReadOptions) -> ParsedRun:
    hasher = hashlib.sha256()
    records = expect(load_json(path, hasher), list, str(path))
    named = FILE_NAME.match(path.name)
    model = require(options.model or (named["model"] if named else None), path,
                    "tau-bench results name no model (only its file name can, and this one does not follow "
                    "tau-bench's pattern)", "--model NAME")
    domain = _domain(records)
    transcript = Transcript()
    instances: dict[str, InstanceRecord] = {}
    predictions: list[PredictionRecord] = []
    seen: dict = {}
    for n, record in enumerate(records):
        where = f"{path}: [{n}]"
        record = expect(record, dict, where)
        instance, prediction = _record(record, where, domain, transcript)
        check_unique(seen, (prediction.instance_id, prediction.train_trial_index), where, f"[{n}]")
        instances.setdefault(instance.instance_id, instance)
        predictions.append(prediction)
    if not predictions:
        raise IngestError(f"{path}: no records in the file")
    notes = [] if domain else [f"{path}: no known tau-bench policy opens the transcripts: task ids are not "
                               "qualified by domain (give each domain its own --dataset)"]
    return agent_run(
        fmt=FORMAT, key=str(path.resolve()), path=path, content_hash=hasher.hexdigest(), model=model,
        dataset_raw="tau-bench", domain=domain, options=options, instances=list(instances.values()),
        predictions=predictions, transcript=transcript, verdict=VERDICT, notes=notes,
        settings={"strategy": named["strategy"] if named else None,
                  "temperature": float(named["temperature"]) if named else None},
    )


def _domain(records: list) -> str | None:
    """airline or retail, from the policy document tau-bench puts first in every transcript."""
    for record in records[:1]:
        traj = record.get("traj") if isinstance(record, dict) else None
        first = traj[0] if isinstance(traj, list) and traj and isinstance(traj[0], dict) else {}
        text = first.get("content") if isinstance(first.get("content"), str) else ""
        for heading, domain in POLICY_DOMAINS:
            if text.lstrip().lower().startswith(heading):
                return domain
    return None


# tau-bench's environment (tau_bench/envs/base.py, `Env.step`) turns a tool's exception into the
# observation "Error: <exception>", its tools answer a refused request with "Error: …", and a tool
# name it does not know gets "Unknown action <name>": the log has no error field, so these are
# its errors, by the harness's own convention.
TOOL_ERROR_PREFIXES = ("Error: ", "Unknown action ")


def tool_error(text: str | None) -> str | None:
    return text if text and text.startswith(TOOL_ERROR_PREFIXES) else None


def _record(record: dict, where: str, domain: str | None, transcript: Transcript) -> tuple[InstanceRecord, PredictionRecord]:
    task_id = record.get("task_id")
    if task_id is None or isinstance(task_id, (bool, dict, list)):
        raise IngestError(f"{where}: task_id: expected an id, found {type(task_id).__name__}")
    trial = record.get("trial", 0)
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        raise IngestError(f"{where}: trial: expected a whole number, found {trial!r}")
    reward = record.get("reward")
    if isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward) or not 0 <= reward <= 1:
        raise IngestError(f"{where}: reward: expected a number from 0 to 1, found {reward!r}")
    raw_id = str(task_id)
    instance_id = f"{domain}/{raw_id}" if domain else raw_id
    traj = record.get("traj")
    add_messages(transcript, instance_id, trial, traj, f"{where}.traj", ref="traj", result_error=tool_error)
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    task = info.get("task") if isinstance(info.get("task"), dict) else {}
    instruction = task.get("instruction") if isinstance(task.get("instruction"), str) else None
    refs = []
    if task.get("actions") is not None:
        refs.append(Reference(text=orjson.dumps(task["actions"]).decode(), correct=True))
    for output in task.get("outputs") or []:
        if isinstance(output, str):
            refs.append(Reference(text=output, correct=True))
    answer = next((m.get("content") for m in reversed(traj) if isinstance(m, dict) and m.get("role") == "assistant"
                   and isinstance(m.get("content"), str) and m.get("content")), None)
    instance = InstanceRecord(instance_id=instance_id, raw_instance_id=raw_id, input_text=instruction, refs=refs,
                              question_hash=question_hash(instruction))
    prediction = PredictionRecord(instance_id=instance_id, train_trial_index=trial, output_text=answer,
                                  score=float(reward), is_correct=reward >= 1, metrics={"reward": float(reward)},
                                  annotations={"reward_info": info["reward_info"]} if info.get("reward_info") else None)
    return instance, prediction


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                "tau-bench results: a JSON array of {task_id, reward, traj, trial}")
