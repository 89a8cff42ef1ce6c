"""`python -m taxonomy labels PATH...`: people's labels of agent failures, loaded as reviews.

Who&When logs carry, per failed run, the agent the people hold responsible (`mistake_agent`), the
step of the first decisive error (`mistake_step`, an index into `history` written as a string) and
why (`mistake_reason`). The Who&When reader (ingest/sources/who_when.py) leaves them out: they are
a reviewer's word, not the harness's. Here each becomes a review with action `label` and no
analyst (a label made apart from any analysis): its step, agent and the reason as its note, for
every run ingested from the log's folder (`runs.source_path`; each `--model` a run) and the
log's question (`question_ID`). The runs must be in the store already, with the same
transcripts: a label is checked against the stored transcript's length, so a step always names a
stored step. Loading the same labels again adds nothing; a file that is not a Who&When log, a
step that is not a number or not a step of its history is an error naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from core.numbers import NumberError, shown, whole_number
from ingest import files
from ingest.errors import IngestError
from ingest.jsonio import expect, load_json
from ingest.walk import matching_files
from store import FaultlineError, writable_db_path, write_session
from store.first_errors import record_labels, runs_from, transcript_lengths

DEFAULT_REVIEWER = "Who&When annotators"
FORMAT = "who-when"
_KEYS = ("mistake_agent", "mistake_step", "mistake_reason")


class LabelsError(FaultlineError):
    """Labels that cannot be loaded: no log, a run not in the store, a transcript that differs."""


@dataclass(frozen=True)
class HumanLabel:
    """The people's label of one log's first decisive error (Who&When's who, when and why)."""

    file: Path
    instance_id: str
    agent: str | None
    step_index: int | None
    reason: str | None
    n_steps: int


@dataclass
class LabelsSummary:
    db: Path
    labels: int = 0
    runs: int = 0
    added: int = 0
    already: int = 0
    with_step: int = 0
    with_agent: int = 0
    reviewer: str = ""

    def line(self) -> str:
        return (f"{self.labels} people's labels loaded as reviews of {self.runs} run(s) into {self.db} ({self.added} "
                f"added, {self.already} already there; {self.with_step} name a step, {self.with_agent} an agent; "
                f"reviewer {self.reviewer!r})")


def _is_log(path: Path) -> bool:
    """A Who&When log, by the keys before its history (its labels follow the history, which can
    be long): the reader's own test."""
    if path.suffix.lower() != ".json":
        return False
    head = files.head(path, 1 << 16) or b""
    return head.lstrip()[:1] == b"{" and b'"history"' in head and (b'"mistake_agent"' in head or (
        b'"question_ID"' in head and b'"is_correct"' in head and b'"ground_truth"' in head))


def read_labels(path: Path) -> list[HumanLabel]:
    """The labels in the Who&When logs at `path` (a file or a folder), one per log that has one."""
    logs = matching_files(path, _is_log)
    if not logs:
        raise LabelsError(f"{path}: no Who&When log (a JSON object with history, and mistake_agent or question_ID, "
                          "is_correct and ground_truth) here")
    out = []
    for log in logs:
        try:
            data = expect(load_json(log), dict, str(log))
        except IngestError as exc:
            raise LabelsError(exc.message) from None
        if not any(k in data for k in _KEYS):
            continue  # a log without labels
        history = data.get("history")
        if not isinstance(history, list):
            raise LabelsError(f"{log}: history: expected a list of messages, found {type(history).__name__}")
        qid = data.get("question_ID")
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise LabelsError(f"{log}: question_ID: expected an id, found {type(qid).__name__}")
        out.append(HumanLabel(log, str(qid), _agent(log, data.get("mistake_agent")),
                              _step(log, data.get("mistake_step"), len(history)),
                              _text(log, data.get("mistake_reason")), len(history)))
    return out


def _text(log: Path, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value.strip() or None if value else None
    raise LabelsError(f"{log}: mistake_reason: expected text, found {type(value).__name__}")


def _agent(log: Path, agent: Any) -> str | None:
    if agent is None or (isinstance(agent, str) and not agent.strip()):
        return None
    if not isinstance(agent, str):
        raise LabelsError(f"{log}: mistake_agent: expected the agent's name, found {agent!r}")
    return agent.strip()


def _step(log: Path, step: Any, n: int) -> int | None:
    """The labelled step as an index into `history` (Who&When writes it as a string)."""
    if step is None or (isinstance(step, str) and not step.strip()):
        return None
    # ASCII digits only: "²".isdigit() is True but int("²") raises (and 5,000 digits do too)
    try:
        index = whole_number(step, "", low=None)
    except NumberError:
        raise LabelsError(f"{log}: mistake_step: expected a step number, found {shown(step)}") from None
    if not 0 <= index < n:
        raise LabelsError(f"{log}: mistake_step {index} is not a step of its history (steps 0 to {n - 1})")
    return index


def load_labels(paths: Sequence[str | Path], db=None, reviewer: str = DEFAULT_REVIEWER) -> LabelsSummary:
    """Read the labels at `paths` and append them as reviews, all or none."""
    path = writable_db_path(db)
    if not path.exists():
        raise LabelsError(f"{path}: no database here yet; load the logs first with `python -m ingest PATH --model NAME`")
    if not reviewer.strip():
        raise LabelsError("--reviewer must name who made the labels")
    labels = [(str(p), lab) for p in paths for lab in read_labels(Path(p))]
    if not labels:
        raise LabelsError(f"{', '.join(map(str, paths))}: the logs carry no labels (mistake_agent, mistake_step, mistake_reason)")
    summary = LabelsSummary(db=path, labels=len(labels), reviewer=reviewer.strip())
    with write_session(path) as con:
        runs = runs_from(con, FORMAT, sorted({str(lab.file.parent.resolve()) for _, lab in labels}))
        lengths = transcript_lengths(con, sorted({r for ids in runs.values() for r in ids}))
        reviews = []
        for given, lab in labels:
            run_ids = runs.get(str(lab.file.parent.resolve()))
            if not run_ids:
                raise LabelsError(f"{lab.file}: its run is not in the store; load it first with "
                                  f"`python -m ingest {given} --model NAME`")
            for run_id in run_ids:
                _check(lab, given, lengths.get((run_id, lab.instance_id, 0)))
                reviews.append({"run_id": run_id, "instance_id": lab.instance_id, "train_trial_index": 0,
                                "step_index": lab.step_index, "agent": lab.agent, "category": None, "note": lab.reason})
        summary.runs = len({r["run_id"] for r in reviews})
        summary.added, summary.already = record_labels(con, reviews, summary.reviewer)
    summary.with_step = sum(lab.step_index is not None for _, lab in labels)
    summary.with_agent = sum(lab.agent is not None for _, lab in labels)
    return summary


def _check(lab: HumanLabel, given: str, stored: int | None) -> None:
    if stored is None:
        raise LabelsError(f"{lab.file}: question {lab.instance_id!r} has no transcript in the store; "
                          f"re-ingest with `python -m ingest {given} --model NAME`")
    if stored != lab.n_steps:
        raise LabelsError(f"{lab.file}: the store holds a transcript of {stored} steps for it, the log {lab.n_steps}; "
                          f"re-ingest it so that its steps are the labelled ones")
