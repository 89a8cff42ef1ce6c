"""OpenHands evaluation output: `output.jsonl`, one instance per line, `{instance_id, instruction,
history, test_result, metadata, metrics, error, instance}`.

`history` is the agent's event stream, read in each layout OpenHands has written: v1 events
(`kind` ActionEvent / ObservationEvent / MessageEvent / SystemPromptEvent / AgentErrorEvent /
Condensation…), v0 events (`action` / `observation` keys) and v0 `[action, observation]` pairs.
An action's thought is a message, its tool call a tool call (the action's own command when it
has no tool call), an observation the tool's result (an error when it says so); an agent error
is an error, anything else a system event. An instance's `error` (the run stopped) ends its
transcript as an error.

Verdict: SWE-bench's, when the output was evaluated (`test_result.report.resolved`, or
`test_result.resolved`), else a report given with `--verdicts FILE`; else the prediction is
stored unscored and the summary says so. A `test_result` written as a Python repr is read as a
literal. TheAgentCompany-style `final_score` (checkpoints met of total) is kept with the
prediction but decides nothing: whether meeting checkpoints passes depends on the benchmark (in
OpenAgentSafety a met checkpoint is unsafe behaviour). Model: `metadata.llm.model` (else
`metadata.model_name`), dataset `metadata.dataset`.

Pipeline: load → identity → instances and predictions with steps → verdict.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

import orjson

from core.names import question_hash
from core.records import InstanceRecord, ParsedRun, PredictionRecord, Skipped

from .. import files
from ..errors import IngestError
from ..jsonio import load_jsonl, try_parse
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
    python_value,
    require,
)
from .chat import error_text

FORMAT = "openhands"


def _is_output(path: Path) -> bool:
    if path.suffix.lower() not in (".jsonl", ".ndjson"):
        return False
    row = try_parse((files.head(path, 1 << 20) or b"").split(b"\n", 1)[0])
    return isinstance(row, dict) and {"instance_id", "history"} <= set(row) and bool(
        {"test_result", "instruction", "metadata"} & set(row))


def looks_like(path: Path) -> bool:
    return bool(matching_files(path, _is_output))


def count_runs(path: Path) -> int:
    return len(matching_files(path, _is_output)) if path.is_dir() else 1


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    verdicts = Verdicts(options.verdicts)
    files = matching_files(path, _is_output) if path.is_dir() else [path]
    yield from each_or_skip(path, files, lambda f: read_output(f, options, verdicts), "OpenHands output")


def read_output(path: Path, options: ReadOptions, verdicts: Verdicts) -> ParsedRun:
    hasher = hashlib.sha256()
    rows = load_jsonl(path, hasher)
    if not rows:
        raise IngestError(f"{path}: no instances in the file")
    metadata = rows[0][1].get("metadata") if isinstance(rows[0][1].get("metadata"), dict) else {}
    llm = metadata.get("llm") if isinstance(metadata.get("llm"), dict) else {}
    model = require(options.model or llm.get("model") or metadata.get("model_name"), path,
                    "OpenHands output names no model (metadata.llm.model)", "--model NAME")
    dataset = require(options.dataset or metadata.get("dataset"), path,
                      "OpenHands output names no dataset (metadata.dataset)", "--dataset NAME")
    transcript = Transcript()
    instances, predictions, seen = [], [], {}
    unjudged_scores = 0
    for lineno, row in rows:
        where = f"{path}:{lineno}"
        instance, prediction, has_score = _instance(row, where, transcript, verdicts)
        check_unique(seen, (instance.instance_id, 0), where, f"line {lineno}")
        instances.append(instance)
        predictions.append(prediction)
        unjudged_scores += has_score and prediction.is_correct is None
    judged = sum(p.is_correct is not None for p in predictions)
    notes = []
    if judged < len(predictions):
        why = (f" ({unjudged_scores} carry a checkpoint final_score, whose meaning depends on the benchmark)"
               if unjudged_scores else "")
        notes.append(f"{path}: {len(predictions) - judged} of {len(predictions)} OpenHands instances have no verdict "
                     f"(no SWE-bench report in test_result){why}: stored unscored; give the harness's verdicts with "
                     "--verdicts FILE")
    verdict = binary_verdict_fields("resolved", "openhands test_result", "SWE-bench resolved (test_result.report), "
                                    "else the --verdicts report") if judged else binary_verdict_fields("resolved", "none", None)
    return agent_run(
        fmt=FORMAT, key=str(path.resolve()), path=path, content_hash=hasher.hexdigest(), model=model,
        dataset_raw=dataset, options=options, instances=instances, predictions=predictions, transcript=transcript,
        verdict=verdict, notes=notes,
        settings={"agent": metadata.get("agent_class"), "split": metadata.get("dataset_split"),
                  "max_iterations": metadata.get("max_iterations")},
    )


def _instance(row: dict, where: str, transcript: Transcript, verdicts: Verdicts) -> tuple[InstanceRecord, PredictionRecord, bool]:
    raw_id = row.get("instance_id")
    if raw_id is None or isinstance(raw_id, (bool, dict, list)):
        raise IngestError(f"{where}: instance_id: expected an id, found {type(raw_id).__name__}")
    iid = str(raw_id)
    instruction = row.get("instruction") if isinstance(row.get("instruction"), str) else None
    history = row.get("history")
    if not isinstance(history, list):
        raise IngestError(f"{where}: history: expected a list of events, found {type(history).__name__}")
    for n, event in enumerate(history):
        _event(transcript, iid, event, f"{where}: history[{n}]", f"history[{n}]")
    if row.get("error"):
        transcript.add(iid, 0, "error", where=f"{where}: error", role="system", text=error_text(row["error"]),
                       error=error_text(row["error"]), source_ref="error")
    test_result = python_value(row.get("test_result"))
    resolved, note = _resolved(test_result)
    if resolved is None:
        resolved, note = verdicts.get(iid)
    has_score = isinstance(test_result, dict) and isinstance(test_result.get("final_score"), dict)
    answer = _last_agent_text(history)
    instance = InstanceRecord(instance_id=iid, raw_instance_id=iid, input_text=instruction,
                              question_hash=question_hash(instruction))
    prediction = PredictionRecord(
        instance_id=iid, output_text=answer, score=None if resolved is None else float(resolved), is_correct=resolved,
        verdict_note=note, annotations={"test_result": test_result} if isinstance(test_result, dict) else None)
    return instance, prediction, has_score


def _resolved(test_result: Any) -> tuple[bool | None, str | None]:
    if not isinstance(test_result, dict):
        return None, None
    report = test_result.get("report")
    for holder in (report, test_result):
        if isinstance(holder, dict) and isinstance(holder.get("resolved"), bool):
            return holder["resolved"], None
    return None, None


def _text(value: Any, where: str) -> str | None:
    if isinstance(value, list):  # v1 thought: a list of text parts
        return content_text(value, where)
    return content_text(value, where) if value is None or isinstance(value, (str, dict)) else str(value)


def _event(transcript: Transcript, iid: str, event: Any, where: str, ref: str) -> None:
    if isinstance(event, list) and len(event) == 2:  # a v0 (action, observation) pair
        _event(transcript, iid, event[0], f"{where}[0]", f"{ref}[0]")
        _event(transcript, iid, event[1], f"{where}[1]", f"{ref}[1]")
        return
    if not isinstance(event, dict):
        raise IngestError(f"{where}: expected an event object, found {type(event).__name__}")
    kind = event.get("kind")
    common = {"started_at": event.get("timestamp"), "source_ref": ref}
    if kind is not None:
        _v1(transcript, iid, event, kind, where, common)
    elif "action" in event:
        _v0_action(transcript, iid, event, where, common)
    elif "observation" in event:
        content = event.get("content") if isinstance(event.get("content"), str) else event.get("message")
        failed = event.get("observation") == "error"
        transcript.add(iid, 0, "error" if failed else "tool result", where=where, role="environment",
                       text=_text(content, where), tool_name=_tool_of(event), error=_text(content, where) if failed else None,
                       tool_call_id=_call_id(event), **common)
    else:
        transcript.add(iid, 0, "system event", where=where, role="system", text=orjson.dumps(event).decode(), **common)


def _v1(transcript: Transcript, iid: str, event: dict, kind: Any, where: str, common: dict) -> None:
    source = event.get("source")
    role = {"agent": "assistant", "user": "user", "environment": "environment"}.get(source, "system")
    if kind == "ActionEvent":
        thought = _text(event.get("thought"), where) or _text(event.get("reasoning_content"), where)
        if thought and thought.strip():
            transcript.add(iid, 0, "message", where=where, role="assistant", text=thought, **common)
        call = event.get("tool_call") if isinstance(event.get("tool_call"), dict) else {}
        action = event.get("action") if isinstance(event.get("action"), dict) else {}
        arguments = call.get("arguments") if call else {k: v for k, v in action.items() if k != "kind"}
        transcript.add(iid, 0, "tool call", where=where, role="assistant",
                       tool_name=event.get("tool_name") or call.get("name") or action.get("kind"),
                       tool_call_id=event.get("tool_call_id") or call.get("id"), arguments=arguments, **common)
    elif kind == "ObservationEvent":
        observation = event.get("observation") if isinstance(event.get("observation"), dict) else {}
        text = next((observation[k] for k in ("output", "content", "message", "text") if isinstance(observation.get(k), (str, list))), None)
        failed = observation.get("error") is True or observation.get("kind") == "ErrorObservation"
        transcript.add(iid, 0, "tool result", where=where, role="tool", text=_text(text, where),
                       tool_name=event.get("tool_name"), tool_call_id=event.get("tool_call_id"),
                       error=(_text(text, where) or "error") if failed else None, **common)
    elif kind == "MessageEvent":
        message = event.get("llm_message") if isinstance(event.get("llm_message"), dict) else event
        transcript.add(iid, 0, "message", where=where, role=role, text=_text(message.get("content"), where), **common)
    elif kind == "SystemPromptEvent":
        prompt = event.get("system_prompt")
        text = prompt.get("text") if isinstance(prompt, dict) else prompt
        transcript.add(iid, 0, "message", where=where, role="system", text=_text(text, where), **common)
    elif kind in ("AgentErrorEvent", "ErrorEvent"):
        error = event.get("error") or event.get("message")
        transcript.add(iid, 0, "error", where=where, role="system", text=error_text(error), error=error_text(error) or "error",
                       tool_name=event.get("tool_name"), tool_call_id=event.get("tool_call_id"), **common)
    else:
        summary = event.get("summary") or event.get("message") or event.get("reason")
        text = f"{kind}" + (f": {summary}" if isinstance(summary, str) and summary else "")
        transcript.add(iid, 0, "system event", where=where, role="system", text=text, **common)


def _v0_action(transcript: Transcript, iid: str, event: dict, where: str, common: dict) -> None:
    action = event.get("action")
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    source = event.get("source")
    if action in ("message", "system"):
        text = args.get("content") if isinstance(args.get("content"), str) else event.get("message")
        role = "system" if action == "system" else "assistant" if source == "agent" else "user"
        transcript.add(iid, 0, "message", where=where, role=role, text=_text(text, where), **common)
        return
    thought = args.get("thought")
    if isinstance(thought, str) and thought.strip():
        transcript.add(iid, 0, "message", where=where, role="assistant", text=thought, **common)
    arguments = {k: v for k, v in args.items() if k != "thought"}
    transcript.add(iid, 0, "tool call", where=where, role="assistant", tool_name=_tool_of(event) or str(action),
                   tool_call_id=_call_id(event), arguments=arguments, source_ref=common["source_ref"])


def _tool_of(event: dict) -> str | None:
    meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
    name = meta.get("function_name")
    return name if isinstance(name, str) else None


def _call_id(event: dict) -> str | None:
    meta = event.get("tool_call_metadata") if isinstance(event.get("tool_call_metadata"), dict) else {}
    found = meta.get("tool_call_id")
    return found if isinstance(found, str) else None


def _last_agent_text(history: list) -> str | None:
    """The agent's last words: its finish message, else its last message."""
    for event in reversed(history):
        if not isinstance(event, dict):
            continue
        observation = event.get("observation")
        if isinstance(observation, dict) and observation.get("kind") == "FinishObservation":
            message = observation.get("message")
            return message if isinstance(message, str) else None
        action = event.get("action")
        if isinstance(action, dict) and action.get("kind") == "FinishAction" and isinstance(action.get("message"), str):
            return action["message"]
        if action == "finish" and isinstance(event.get("args"), dict):
            final = event["args"].get("final_thought") or event["args"].get("outputs")
            return final if isinstance(final, str) else None
    return None


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                "OpenHands output .jsonl whose lines have instance_id and history")
