"""ATIF, the Agent Trajectory Interchange Format (Harbor's): a JSON trajectory `{schema_version:
"ATIF-v1.x", session_id, agent: {name, version, model_name}, steps: [{step_id, source, message,
reasoning_content?, tool_calls?, observation?, metrics?, model_name?, timestamp?,
is_copied_context?}], final_metrics, continued_trajectory_ref?}`.

One trajectory (with the files it continues into after context summarisation, whose copied
context is not counted twice) is one prediction. Steps: a step's reasoning and message (a
message), each tool call, each observation result (a tool result; one naming a sub-agent's
trajectory is a system event, and that trajectory's steps follow at depth 1 when the file is
there — else the summary says it is missing).

ATIF carries no verdict: Harbor's `result.json` of the trial (beside the trajectory or one folder
up) gives the task name, the dataset and the verifier's reward (1 passes); else a report given
with --verdicts; else the prediction is stored unscored. The model is the agent's `model_name`
(else a step's), else --model; the dataset Harbor's `source`, else --dataset. A folder of
trajectories of one model, agent and dataset is one run.

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any, Iterator

from core.names import question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Skipped

from .. import files
from ..errors import IngestError
from ..jsonio import expect, load_json
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript, content_text
from ..walk import matching_files
from .agent import (
    Verdicts,
    agent_run,
    binary_verdict_fields,
    check_unique,
    each_or_skip,
    require,
)

FORMAT = "atif"
ROLES = {"agent": "assistant", "user": "user", "system": "system"}


def _is_trajectory(path: Path) -> bool:
    if path.suffix.lower() != ".json":
        return False
    head = (files.head(path, 2048) or b"").decode("utf-8", errors="replace")
    return head.lstrip().startswith("{") and '"ATIF-v' in head and '"schema_version"' in head


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_trajectory))


def count_runs(path: Path) -> int:
    return 1


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    found = matching_files(path, _is_trajectory) if path.is_dir() else [path]
    verdicts = Verdicts(options.verdicts)
    loaded: dict[Path, dict] = {}
    hashers: dict[Path, Any] = {}
    for file in found:
        hashers[file] = hashlib.sha256()
        loaded[file] = expect(load_json(file, hashers[file]), dict, str(file))
    continued = {_ref(file, doc.get("continued_trajectory_ref")) for file, doc in loaded.items()} - {None}
    groups: dict[tuple, list] = {}
    # a continuation is read with the trajectory it continues
    own = [file for file in loaded if file not in continued or file == path]
    for prediction in each_or_skip(path, own, lambda f: _prediction(f, loaded[f], options, verdicts),
                                   "ATIF trajectory"):
        if isinstance(prediction, Skipped):
            yield prediction
        else:
            groups.setdefault(prediction["key"], []).append(prediction)
    for (model, dataset, agent), members in groups.items():
        yield _run(path, model, dataset, agent, members, options)


def _ref(file: Path, ref: Any) -> Path | None:
    """The file a reference names, beside `file`; a copy renamed with a prefix
    (`<run>.trajectory.json` continuing in `<run>.trajectory.cont-1.json`) keeps the prefix."""
    if not isinstance(ref, str) or not ref:
        return None
    target = file.parent / ref
    stem = "trajectory.json"
    if not target.exists() and file.name.endswith(stem) and ref.startswith("trajectory."):
        renamed = file.parent / (file.name[: -len(stem)] + ref)
        if renamed.exists():
            return renamed
    return target


def _harbor_result(file: Path) -> dict:
    """Harbor's trial result (<trial>/result.json, the trajectory in <trial>/agent/ or beside it)."""
    for folder in (file.parent, file.parent.parent):
        candidate = folder / "result.json"
        if candidate.is_file():
            value = load_json(candidate)
            if isinstance(value, dict) and ("verifier_result" in value or "task_name" in value):
                return value
    return {}


def _prediction(file: Path, doc: dict, options: ReadOptions, verdicts: Verdicts) -> dict:
    agent = doc.get("agent") if isinstance(doc.get("agent"), dict) else {}
    steps = expect(doc.get("steps"), list, f"{file}: steps")
    step_model = next((s.get("model_name") for s in steps if isinstance(s, dict) and isinstance(s.get("model_name"), str)), None)
    model = require(options.model or agent.get("model_name") or step_model, file,
                    "ATIF trajectory names no model (agent.model_name)", "--model NAME")
    result = _harbor_result(file)
    dataset = require(options.dataset or result.get("source") or result.get("dataset_name"), file,
                      "ATIF trajectory names no dataset (no Harbor result.json beside it)", "--dataset NAME")
    task = result.get("task_name") if isinstance(result.get("task_name"), str) else None
    session = doc.get("session_id")
    iid = task or (str(session) if isinstance(session, (str, int)) and not isinstance(session, bool) else file.stem)
    return {"key": (model, dataset, agent.get("name")), "file": file, "doc": doc, "iid": iid, "result": result,
            "verdicts": verdicts}


def _run(path: Path, model: str, dataset: str, agent: Any, members: list[dict], options: ReadOptions) -> ParsedRun:
    hasher = hashlib.sha256()
    transcript = Transcript()
    instances, predictions, seen, notes = [], [], {}, []
    for member in sorted(members, key=lambda m: str(m["file"])):
        file, doc, iid = member["file"], member["doc"], member["iid"]
        check_unique(seen, (iid, 0), file, file)
        chain = _chain(file, doc, notes)
        for part_file, part in chain:
            hasher.update(str(part_file.name).encode())
            hasher.update(repr(part.get("steps")).encode())
        task = None
        for k, (part_file, part) in enumerate(chain):
            copied = 0
            for n, step in enumerate(expect(part.get("steps"), list, f"{part_file}: steps")):
                where = f"{part_file}: steps[{n}]"
                step = expect(step, dict, where)
                if k and step.get("is_copied_context"):
                    copied += 1
                    continue
                task = task or (step.get("message") if step.get("source") == "user" and isinstance(step.get("message"), str) else None)
                _step(transcript, iid, step, where, f"{part_file.name}: steps[{n}]", part_file, notes, depth=0)
            if k:
                transcript.add(iid, 0, "system event", where=str(part_file), role="system",
                               text=f"continued in {part_file.name} after context summarisation ({copied} copied "
                                    "context step(s) not repeated)", source_ref=part_file.name)
        reward, resolved, note = _verdict(member)
        instances.append(InstanceRecord(instance_id=iid, raw_instance_id=iid, input_text=task, question_hash=question_hash(task)))
        last = next((s.get("message") for s in reversed(chain[-1][1].get("steps") or [])
                     if isinstance(s, dict) and s.get("source") == "agent" and isinstance(s.get("message"), str)), None)
        predictions.append(PredictionRecord(instance_id=iid, output_text=last, is_correct=resolved, verdict_note=note,
                                            score=reward if reward is not None else (None if resolved is None else float(resolved))))
    judged = sum(p.is_correct is not None for p in predictions)
    if judged < len(predictions):
        notes.append(f"{path}: {len(predictions) - judged} of {len(predictions)} ATIF trajectories have no verdict (no "
                     "Harbor result.json with a verifier reward beside them): stored unscored; give the harness's "
                     "verdicts with --verdicts FILE")
    verdict = (binary_verdict_fields("reward", "harbor verifier reward", "Harbor's verifier reward: 1 passes, below 1 "
                                     "fails (else the --verdicts report)")
               if judged else binary_verdict_fields("reward", "none", None))
    return agent_run(fmt=FORMAT, key=f"{path.resolve()}|{agent}", path=path, content_hash=hasher.hexdigest(), model=model,
                     dataset_raw=dataset, options=options, instances=instances, predictions=predictions,
                     transcript=transcript, verdict=verdict, notes=notes, settings={"agent": agent})


def _chain(file: Path, doc: dict, notes: list[str]) -> list[tuple[Path, dict]]:
    """The trajectory and the files it continues into, in order."""
    chain, seen = [(file, doc)], {file}
    while (ref := _ref(chain[-1][0], chain[-1][1].get("continued_trajectory_ref"))) is not None:
        if ref in seen:
            raise IngestError(f"{chain[-1][0]}: continued_trajectory_ref {ref.name} loops back")
        if not ref.is_file():
            notes.append(f"{chain[-1][0]}: continues in {ref.name}, which is not there: its steps are missing")
            break
        seen.add(ref)
        chain.append((ref, expect(load_json(ref), dict, str(ref))))
    return chain


def _step(transcript: Transcript, iid: str, step: dict, where: str, ref: str, file: Path, notes: list[str],
          depth: int, agent: str | None = None) -> None:
    source = step.get("source")
    role = ROLES.get(source, "system") if isinstance(source, str) else "system"
    metrics = step.get("metrics") if isinstance(step.get("metrics"), dict) else {}
    common = {"started_at": step.get("timestamp"), "depth": depth, "agent": agent}
    reasoning = step.get("reasoning_content") if isinstance(step.get("reasoning_content"), str) else None
    message = content_text(step.get("message"), where)
    text = "\n".join(t for t in (reasoning, message) if t and t.strip()) or None
    calls = step.get("tool_calls") if isinstance(step.get("tool_calls"), list) else []
    meta = {"input_tokens": metrics.get("prompt_tokens"), "output_tokens": metrics.get("completion_tokens"),
            "model": step.get("model_name") if isinstance(step.get("model_name"), str) else None}
    if text or not calls:
        transcript.add(iid, 0, "message", where=where, role=role, text=text, source_ref=ref, **common, **meta)
        meta = {}
    names = {}
    for k, call in enumerate(calls):
        call = expect(call, dict, f"{where}.tool_calls[{k}]")
        names[call.get("tool_call_id")] = call.get("function_name")
        transcript.add(iid, 0, "tool call", where=f"{where}.tool_calls[{k}]", role="assistant",
                       tool_name=call.get("function_name"), tool_call_id=call.get("tool_call_id"),
                       arguments=call.get("arguments") if call.get("arguments") is not None else {},
                       source_ref=f"{ref}.tool_calls[{k}]", **common, **meta)
        meta = {}
    observation = step.get("observation") if isinstance(step.get("observation"), dict) else {}
    for k, result in enumerate(observation.get("results") or []):
        at = f"{where}.observation.results[{k}]"
        result = expect(result, dict, at)
        subagents = result.get("subagent_trajectory_ref")
        if subagents:
            for sub in subagents if isinstance(subagents, list) else [subagents]:
                _subagent(transcript, iid, sub, at, f"{ref}.observation.results[{k}]", file, notes, depth)
            continue
        call_id = result.get("source_call_id")
        transcript.add(iid, 0, "tool result", where=at, role="tool", text=content_text(result.get("content"), at),
                       tool_call_id=call_id, tool_name=names.get(call_id), source_ref=f"{ref}.observation.results[{k}]",
                       **common)


def _subagent(transcript: Transcript, iid: str, sub: Any, where: str, ref: str, file: Path, notes: list[str], depth: int) -> None:
    sub = sub if isinstance(sub, dict) else {"trajectory_path": sub}
    target = _ref(file, sub.get("trajectory_path"))
    extra = sub.get("extra") if isinstance(sub.get("extra"), dict) else {}
    summary = extra.get("summary") if isinstance(extra.get("summary"), str) else None
    name = target.name if target else "?"
    transcript.add(iid, 0, "system event", where=where, role="system", depth=depth,
                   text=f"sub-agent trajectory {name}" + (f": {summary}" if summary else ""),
                   span_id=sub.get("session_id") if isinstance(sub.get("session_id"), str) else None, source_ref=ref)
    if target is None or not target.is_file():
        notes.append(f"{file}: sub-agent trajectory {name} is not there: its steps are missing")
        return
    doc = expect(load_json(target), dict, str(target))
    agent = (doc.get("agent") or {}).get("name") if isinstance(doc.get("agent"), dict) else None
    for n, step in enumerate(expect(doc.get("steps"), list, f"{target}: steps")):
        _step(transcript, iid, expect(step, dict, f"{target}: steps[{n}]"), f"{target}: steps[{n}]",
              f"{target.name}: steps[{n}]", target, notes, depth + 1, agent)


def _verdict(member: dict) -> tuple[float | None, bool | None, str | None]:
    """(reward, passed, note) from Harbor's verifier, else the --verdicts report."""
    verifier = member["result"].get("verifier_result") if isinstance(member["result"].get("verifier_result"), dict) else {}
    rewards = verifier.get("rewards") if isinstance(verifier.get("rewards"), dict) else {}
    reward = rewards.get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool) and math.isfinite(reward):
        return float(reward), reward >= 1, None
    resolved, note = member["verdicts"].get(member["iid"])
    return None, resolved, note


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                'an ATIF trajectory (.json with schema_version "ATIF-v…" and steps)')
