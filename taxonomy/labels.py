"""`python -m taxonomy labels PATH...`: people's labels of agent failures, loaded as reviews.

Who&When logs (ingest/readers/whowhen.py) carry, per failed run, the agent the people hold
responsible (`mistake_agent`), the step of the first decisive error (`mistake_step`) and why
(`mistake_reason`). Each becomes a review with action `label` and no analyst (a label made apart
from any analysis): its step, agent and the reason as its note. The runs must be in the store
already (`python -m ingest PATH`), with the same transcripts: a label is checked against the
stored transcript's length, so a step always names a stored step. Loading the same labels again
adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ingest.errors import IngestError
from ingest.readers.whowhen import HumanLabel, read_labels
from store import FaultlineError, writable_db_path, write_session
from store.first_errors import record_labels, transcript_lengths

DEFAULT_REVIEWER = "Who&When annotators"


class LabelsError(FaultlineError):
    """Labels that cannot be loaded: no log, a run not in the store, a transcript that differs."""


@dataclass
class LabelsSummary:
    db: Path
    labels: int = 0
    added: int = 0
    already: int = 0
    with_step: int = 0
    with_agent: int = 0
    reviewer: str = ""
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        notes = f"; {'; '.join(self.notes)}" if self.notes else ""
        return (f"{self.labels} people's labels loaded as reviews into {self.db} ({self.added} added, {self.already} "
                f"already there; {self.with_step} name a step, {self.with_agent} an agent; reviewer {self.reviewer!r})"
                f"{notes}")


def load_labels(paths: Sequence[str | Path], db=None, reviewer: str = DEFAULT_REVIEWER) -> LabelsSummary:
    """Read the labels at `paths` and append them as reviews, all or none."""
    path = writable_db_path(db)
    if not path.exists():
        raise LabelsError(f"{path}: no database here yet; load the logs first with `python -m ingest PATH`")
    if not reviewer.strip():
        raise LabelsError("--reviewer must name who made the labels")
    labels: list[tuple[str, HumanLabel]] = []
    for p in paths:
        try:
            labels += [(str(p), lab) for lab in read_labels(Path(p))]
        except IngestError as exc:
            raise LabelsError(exc.message) from None
    summary = LabelsSummary(db=path, labels=len(labels), reviewer=reviewer.strip())
    with write_session(path) as con:
        lengths = transcript_lengths(con, sorted({lab.run_id for _, lab in labels}))
        _check(labels, lengths)
        summary.added, summary.already = record_labels(con, (_review(lab) for _, lab in labels), summary.reviewer)
    summary.with_step = sum(lab.step_index is not None for _, lab in labels)
    summary.with_agent = sum(lab.agent is not None for _, lab in labels)
    if not labels:
        summary.notes.append("the logs carry no labels (mistake_agent, mistake_step, mistake_reason)")
    return summary


def _check(labels: list[tuple[str, HumanLabel]], lengths: dict[tuple, int]) -> None:
    runs = {key[0] for key in lengths}
    for given, lab in labels:
        key = (lab.run_id, lab.instance_id, lab.train_trial_index)
        if lab.run_id not in runs:
            raise LabelsError(f"{lab.source}: its run is not in the store; load it first with `python -m ingest {given}`")
        if key not in lengths:
            raise LabelsError(f"{lab.source}: question {lab.instance_id!r} has no transcript in the store; "
                              f"re-ingest with `python -m ingest {given}`")
        if lengths[key] != lab.n_steps:
            raise LabelsError(f"{lab.source}: the store holds a transcript of {lengths[key]} steps for it, the log "
                              f"{lab.n_steps}; re-ingest with `python -m ingest {given}` so its steps are the labelled ones")


def _review(lab: HumanLabel) -> dict:
    return {"run_id": lab.run_id, "instance_id": lab.instance_id, "train_trial_index": lab.train_trial_index,
            "step_index": lab.step_index, "agent": lab.agent, "category": None, "note": lab.reason}
