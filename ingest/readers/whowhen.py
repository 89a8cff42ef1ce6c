"""Who&When failure logs (Zhang et al., "Which Agent Causes Task Failures and When?", ICML 2025):
one JSON file per run of a multi-agent system on one task, with the people's labels of its first
decisive error.

A file is `{question, question_ID, level, ground_truth, is_correct, history: [{role, content,
name?}], system_prompt?, mistake_agent, mistake_step, mistake_reason}`. The files of one folder
are one run (one system on one benchmark); each file is a prediction whose transcript is its
`history`, one step per entry, numbered as the labels number it (`mistake_step` is an index into
`history`, written as a string). The agent is the entry's `name` (CaptainAgent logs) or its
`role` when that is not a chat role (Magentic-One logs: `Orchestrator (-> WebSurfer)`). An entry
that reports a code execution (AutoGen's `exitcode: N (execution succeeded|failed)`) is a tool
result, with an error when the exit code is not 0; the executor's notice that a turn held no
code to run is a system event; every other entry is a message.

The verdict is the file's own `is_correct`. The log keeps no final answer apart from the
conversation, so `output_text` is empty and `output_kind` says `transcript`. It names neither the
model nor the system: the run is named after its folder unless `--model` names it (the summary
says so). The labels are not part of the run: `python -m taxonomy labels PATH` loads them as
reviews (`read_labels`), and the reader's note says how many it saw.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from .. import files
from ..errors import IngestError, read_each
from ..jsonio import expect, load_json
from ..names import question_hash
from ..options import ReadOptions
from ..records import InstanceRecord, ParsedRun, PredictionRecord, Reference, RunRecord
from ..transcript import Transcript
from ..walk import matching_files

FORMAT = "who-when"
DATASET = "who-when"
HEAD_BYTES = 64 * 1024
# keys only Who&When files have, besides `history` (one of them suffices: labels are optional)
_MARKERS = ('"mistake_agent"', '"mistake_step"', '"question_ID"')
_CHAT_ROLES = {"user", "assistant", "system", "tool", "function", "human", "developer"}
# AutoGen's report of a code execution (autogen/coding: "exitcode: 1 (execution failed)"), and its
# executor's notice when a turn holds no code to run
_EXECUTION = re.compile(r"\A\s*exitcode:\s*(-?\d+)\s*\(execution (?:succeeded|failed)[^)]*\)")
_NO_CODE = re.compile(r"\A\s*There is no code from the last \d+ messages? for me to execute")


def is_log(path: Path) -> bool:
    """A JSON object holding a `history` and one of Who&When's own keys near its start."""
    if path.suffix.lower() != ".json":
        return False
    head = (files.head(path, HEAD_BYTES) or b"").decode("utf-8", errors="replace")
    return head.lstrip().startswith("{") and '"history"' in head and any(m in head for m in _MARKERS)


def _logs(path: Path) -> list[Path]:
    return matching_files(path, is_log)


def looks_like(path: Path) -> bool:
    return bool(_logs(path))


def _folders(logs: list[Path]) -> dict[Path, list[Path]]:
    """The logs grouped by folder: each folder is one run."""
    out: dict[Path, list[Path]] = {}
    for log in logs:
        out.setdefault(log.parent, []).append(log)
    return out


def count_runs(path: Path) -> int:
    return len(_folders(_logs(path)))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun]:
    logs = _logs(path)
    if not logs:
        raise IngestError(f"{path}: no Who&When log (a JSON object with history and mistake_agent, "
                          "mistake_step or question_ID) here")
    yield from read_each(list(_folders(logs).items()), lambda item: [read_folder(item[0], item[1], options)],
                         "Who&When log")


@dataclass(frozen=True)
class HumanLabel:
    """The people's label of one prediction's first decisive error (Who&When's who, when, why)."""

    run_id: str
    instance_id: str
    train_trial_index: int
    agent: str | None
    step_index: int | None
    reason: str | None
    source: str  # the file and its keys, for messages and the review's note
    n_steps: int


def _order(log: Path) -> tuple:
    """Numbered files in number order (1.json, 2.json, ..., 10.json), then by name."""
    stem = log.stem
    return (0, int(stem), "") if stem.isdigit() else (1, 0, stem)


def run_id_of(folder: Path) -> str:
    return hashlib.sha1(f"{FORMAT}|{folder.resolve()}".encode()).hexdigest()[:16]


def _parsed(folder: Path, logs: list[Path], hasher=None) -> list[tuple[Path, dict]]:
    out = []
    for log in sorted(logs, key=_order):
        data = expect(load_json(log, hasher), dict, str(log))
        expect(data.get("history"), list, f"{log}: history")
        out.append((log, data))
    return out


def _instance_ids(parsed: list[tuple[Path, dict]]) -> list[tuple[str, str, int]]:
    """(instance_id, raw id, trial) per file: its question_ID (else the file's name); a question
    logged twice in one folder is a second trial."""
    seen: dict[str, int] = {}
    out = []
    for log, data in parsed:
        raw = data.get("question_ID")
        raw = str(raw) if isinstance(raw, (str, int)) and not isinstance(raw, bool) and str(raw).strip() else log.stem
        trial = seen.get(raw, 0)
        seen[raw] = trial + 1
        out.append((raw, raw, trial))
    return out


def read_folder(folder: Path, logs: list[Path], options: ReadOptions) -> ParsedRun:
    hasher = hashlib.sha256()
    parsed = _parsed(folder, logs, hasher)
    transcript = Transcript()
    instances: dict[str, InstanceRecord] = {}
    predictions = []
    labelled = 0
    for (log, data), (instance_id, raw_id, trial) in zip(parsed, _instance_ids(parsed)):
        if instance_id not in instances:
            instances[instance_id] = _instance(log, data, instance_id, raw_id)
        predictions.append(_prediction(log, data, instance_id, trial))
        _steps(log, data["history"], instance_id, trial, transcript)
        labelled += any(k in data for k in ("mistake_agent", "mistake_step", "mistake_reason"))
    notes = []
    if not options.model:
        notes.append(f"Who&When logs name neither the model nor the agent system: the run is named after its "
                     f"folder ({folder.name!r}); give --model NAME to name it")
    if labelled:
        notes.append(f"{labelled} file(s) carry people's labels of the first decisive error (agent, step, "
                     f"reason): load them as reviews with `python -m taxonomy labels {folder}`")
    run = RunRecord(
        run_id=run_id_of(folder),
        source_format=FORMAT,
        source_path=str(folder.resolve()),
        content_hash=hasher.hexdigest(),
        run_name=folder.name,
        model=options.model or folder.name,
        dataset=options.dataset or DATASET,
        dataset_raw=DATASET,
        main_metric="is_correct",
        main_metric_source="Who&When is_correct",
        metric_min=0.0,
        metric_max=1.0,
        lower_is_better=False,
        scale_source="binary",
        verdict_rule="the log's own is_correct",
        settings={"harness": "who-when", "files": len(parsed)},
    )
    return ParsedRun(run=run, instances=list(instances.values()), predictions=predictions, steps=transcript,
                     notes=notes)


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise IngestError(f"{where}: expected text, found {type(value).__name__}")


def _instance(log: Path, data: dict, instance_id: str, raw_id: str) -> InstanceRecord:
    question = _text(data.get("question"), f"{log}: question")
    truth = data.get("ground_truth")
    refs = [Reference(text=str(truth), correct=True)] if truth not in (None, "") and not isinstance(truth, (dict, list)) else []
    level = data.get("level")
    return InstanceRecord(
        instance_id=instance_id,
        raw_instance_id=raw_id,
        sub_split=f"level {level}" if isinstance(level, (str, int)) and str(level).strip() else None,
        input_text=question,
        refs=refs,
        question_hash=question_hash(question),
        prompt_text=_system_prompts(log, data.get("system_prompt")),
    )


def _system_prompts(log: Path, prompts: Any) -> str | None:
    """Each agent's system prompt, under its name: what the agents were told besides the task."""
    if prompts is None:
        return None
    if isinstance(prompts, str):
        return prompts or None
    if not isinstance(prompts, dict):
        raise IngestError(f"{log}: system_prompt: expected an object of agent → prompt, found {type(prompts).__name__}")
    parts = [f"[{agent} system prompt]\n{text}" for agent, text in prompts.items() if isinstance(text, str) and text.strip()]
    return "\n\n".join(parts) or None


def _prediction(log: Path, data: dict, instance_id: str, trial: int) -> PredictionRecord:
    verdict = data.get("is_correct")
    if verdict is not None and not isinstance(verdict, bool):
        raise IngestError(f"{log}: is_correct: expected true or false, found {verdict!r}")
    return PredictionRecord(
        instance_id=instance_id,
        train_trial_index=trial,
        score=None if verdict is None else float(verdict),
        is_correct=verdict,
        output_kind="transcript",
        verdict_note=None if verdict is not None else "the log gives no verdict (is_correct)",
    )


def step_agent(entry: dict) -> str | None:
    """Who acted: the entry's `name`, else its `role` when that names an agent, not a chat role."""
    name = entry.get("name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    role = entry.get("role")
    if isinstance(role, str) and role.strip() and role.strip().casefold() not in _CHAT_ROLES:
        return role.strip()
    return None


def _steps(log: Path, history: list, instance_id: str, trial: int, transcript: Transcript) -> None:
    for i, entry in enumerate(history):
        where = f"{log}: history[{i}]"
        entry = expect(entry, dict, where)
        content = entry.get("content")
        if isinstance(content, list):  # AutoGen content parts
            content = "\n".join(c if isinstance(c, str) else str(c.get("text", "")) for c in content
                                if isinstance(c, (str, dict)))
        text = _text(content, f"{where}: content")
        agent = step_agent(entry)
        role = entry.get("role") if isinstance(entry.get("role"), str) else None
        m = _EXECUTION.match(text or "")
        if _NO_CODE.match(text or ""):
            transcript.add(instance_id, trial, "system event", where=where, text=text, agent=agent, role="environment",
                           source_ref=f"history[{i}]")
        elif m:
            error = None if m.group(1) == "0" else _execution_error(text)
            transcript.add(instance_id, trial, "tool result", where=where, text=text, agent=agent, role="tool",
                           error=error, source_ref=f"history[{i}]")
        else:
            # an agent's message is the agent's own (AutoGen's role says how its peers received it)
            chat_role = "assistant" if agent or not role else role.casefold()
            transcript.add(instance_id, trial, "message", where=where, text=text, agent=agent,
                           role={"human": "user", "function": "tool", "developer": "system"}.get(chat_role, chat_role),
                           source_ref=f"history[{i}]")


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b")


def _execution_error(text: str) -> str:
    """`exitcode: 1 (execution failed)` and the exception it printed (its last line when it
    printed none that looks like one)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    head = lines[0]
    raised = [line for line in lines[1:] if _EXCEPTION.match(line)]
    last = raised[-1] if raised else (lines[-1] if len(lines) > 1 else "")
    return f"{head}: {last}" if last and last != head else head


def read_labels(path: Path) -> list[HumanLabel]:
    """The people's labels in the Who&When logs at `path` (a file or a folder), one per file that
    has any: its agent, step (checked against its history) and reason."""
    logs = _logs(path)
    if not logs:
        raise IngestError(f"{path}: no Who&When log (a JSON object with history and mistake_agent, "
                          "mistake_step or question_ID) here")
    out = []
    for folder, group in _folders(logs).items():
        parsed = _parsed(folder, group)
        for (log, data), (instance_id, _, trial) in zip(parsed, _instance_ids(parsed)):
            if not any(k in data for k in ("mistake_agent", "mistake_step", "mistake_reason")):
                continue
            n = len(data["history"])
            out.append(HumanLabel(run_id_of(folder), instance_id, trial, _label_agent(log, data.get("mistake_agent")),
                                  _label_step(log, data.get("mistake_step"), n),
                                  _text(data.get("mistake_reason"), f"{log}: mistake_reason"), str(log), n))
    return out


def _label_agent(log: Path, agent: Any) -> str | None:
    if agent is None or (isinstance(agent, str) and not agent.strip()):
        return None
    if not isinstance(agent, str):
        raise IngestError(f"{log}: mistake_agent: expected the agent's name, found {agent!r}")
    return agent.strip()


def _label_step(log: Path, step: Any, n: int) -> int | None:
    """The labelled step as an index into `history` (Who&When writes it as a string)."""
    if step is None or (isinstance(step, str) and not step.strip()):
        return None
    if isinstance(step, bool) or not isinstance(step, (int, str)) or not str(step).strip().lstrip("-").isdigit():
        raise IngestError(f"{log}: mistake_step: expected a step number, found {step!r}")
    index = int(str(step).strip())
    if not 0 <= index < n:
        raise IngestError(f"{log}: mistake_step {index} is not a step of its history (steps 0 to {n - 1})")
    return index
