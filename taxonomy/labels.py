"""`python -m taxonomy labels PATH...`: people's labels of failures, loaded as reviews.

Two kinds of file. A label table (`.csv`, or `.jsonl` with one object a line) names a failure by
`dataset`, `model` (as pages name it, with its variant), `instance_id` and optionally
`train_trial_index`, and gives people's `category` (a category of a taxonomy the store holds, or
a label that is not an error type; matched without regard to case), with optional `step`, `agent`
and `reviewer` (else --reviewer) columns: the review sample `taxonomy review-sample --out` writes,
once its category column is filled in, is one. Every question of that model and dataset in the
store gets the label (every trial unless the row names one); a row naming a failure the store
does not hold, an unknown category, or no category, step or agent is an error naming its line.

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
from ingest.jsonio import expect, load_json, read_bytes
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
    tables = [p for p in paths if is_table(Path(p))]
    if tables:
        if len(tables) < len(paths):
            raise LabelsError("give label tables (.csv, .jsonl) and Who&When logs in separate commands")
        return load_tables([Path(p) for p in tables], db, reviewer)
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


# ----------------------------------------------------------------------------- label tables

TABLE_SUFFIXES = (".csv", ".jsonl")
TABLE_KEYS = ("dataset", "model", "instance_id")
MAX_LABEL_ROWS = 1_000_000


@dataclass(frozen=True)
class TableLabel:
    where: str  # "FILE:LINE"
    dataset: str
    model: str
    instance_id: str
    trial: int | None
    category: str | None
    step: int | None
    agent: str | None
    reviewer: str | None
    note: str | None


def is_table(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in TABLE_SUFFIXES


def _rows(path: Path):
    """(line, dict) of a label table."""
    import csv

    if path.suffix.lower() == ".jsonl":
        from ingest.jsonio import load_jsonl

        try:
            yield from load_jsonl(path)
        except IngestError as exc:
            raise LabelsError(exc.message) from None
        return
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except IngestError as exc:
        raise LabelsError(exc.message) from None
    except UnicodeDecodeError:
        raise LabelsError(f"{path}: not UTF-8 text") from None
    try:
        reader = csv.DictReader(text.splitlines())
        missing = [c for c in TABLE_KEYS if c not in (reader.fieldnames or [])]
        if missing:
            raise LabelsError(f"{path}: no column {', '.join(missing)}; a label table needs {', '.join(TABLE_KEYS)} "
                              "and category (or step, agent)")
        for line, row in enumerate(reader, start=2):
            yield line, row
    except csv.Error as exc:
        raise LabelsError(f"{path}: not a CSV file ({exc})") from None


def _cell(row: dict, key: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    value = " ".join(str(value).split()) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value
    if not isinstance(value, str):
        raise LabelsError(f"{key}: expected text, found {type(value).__name__}")
    return value or None


def read_table(path: Path, categories: dict[str, str]) -> list[TableLabel]:
    """The labels of one table; `categories` maps a casefolded name to the store's spelling."""
    out = []
    for n, (line, row) in enumerate(_rows(path)):
        where = f"{path}:{line}"
        if n >= MAX_LABEL_ROWS:
            raise LabelsError(f"{path}: more than {MAX_LABEL_ROWS:,} labels")
        try:
            keys = [_cell(row, k) for k in TABLE_KEYS]
            category, agent, reviewer, note = (_cell(row, k) for k in ("category", "agent", "reviewer", "note"))
            trial, step = (_optional_number(row.get(k), k) for k in ("train_trial_index", "step"))
        except LabelsError as exc:
            raise LabelsError(f"{where}: {exc.message}") from None
        if not all(keys):
            raise LabelsError(f"{where}: {TABLE_KEYS[[bool(k) for k in keys].index(False)]} is empty")
        if category is not None:
            if category.casefold() not in categories:
                raise LabelsError(f"{where}: {shown(category)} is not a category of any taxonomy in the store "
                                  f"(nor a label that is not an error type)")
            category = categories[category.casefold()]
        elif step is None and agent is None:
            raise LabelsError(f"{where}: no category, step or agent: nothing to label")
        out.append(TableLabel(where, *keys, trial, category, step, agent, reviewer, note))
    return out


def _optional_number(value: Any, key: str) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        return whole_number(value, key, low=0)
    except NumberError:
        raise LabelsError(f"{key}: expected a whole number, found {shown(value)}") from None


def load_tables(paths: Sequence[Path], db=None, reviewer: str = "") -> LabelsSummary:
    """Append the labels of label tables as people's labels (reviews with action 'label'), all or none."""
    from store.calibration import known_categories, predictions_for

    from .catalog import AGENT_VERSION, BUILTIN_VERSION, NOT_ERROR_TYPES, shipped

    path = writable_db_path(db)
    if not path.exists():
        raise LabelsError(f"{path}: no database here yet; load the logs first with `python -m ingest PATH`")
    summary = LabelsSummary(db=path, reviewer=reviewer.strip())
    with write_session(path) as con:
        names = {*known_categories(con), *NOT_ERROR_TYPES, *shipped(BUILTIN_VERSION).names,
                 *shipped(AGENT_VERSION).names}
        categories = {n.casefold(): n for n in names}
        labels = [lab for p in paths for lab in read_table(Path(p), categories)]
        if not labels:
            raise LabelsError(f"{', '.join(map(str, paths))}: no labels")
        found = predictions_for(con, sorted({(lab.dataset, lab.model, lab.instance_id) for lab in labels}))
        by_reviewer: dict[str, list[dict]] = {}
        for lab in labels:
            who = lab.reviewer or reviewer.strip()
            if not who:
                raise LabelsError(f"{lab.where}: no reviewer: give --reviewer or a reviewer column")
            held = [(run, t) for run, t in found.get((lab.dataset, lab.model, lab.instance_id), [])
                    if lab.trial is None or t == lab.trial]
            if not held:
                raise LabelsError(f"{lab.where}: the store holds no prediction of {shown(lab.model)} on "
                                  f"{shown(lab.dataset)} question {shown(lab.instance_id)}"
                                  + (f" trial {lab.trial}" if lab.trial is not None else ""))
            by_reviewer.setdefault(who, []).extend(
                {"run_id": run, "instance_id": lab.instance_id, "train_trial_index": t, "step_index": lab.step,
                 "agent": lab.agent, "category": lab.category, "note": lab.note} for run, t in held)
        summary.labels = len(labels)
        summary.runs = len({r["run_id"] for rows in by_reviewer.values() for r in rows})
        for who, rows in by_reviewer.items():
            added, already = record_labels(con, rows, who)
            summary.added += added
            summary.already += already
        summary.reviewer = ", ".join(sorted(by_reviewer))
    summary.with_step = sum(lab.step is not None for lab in labels)
    summary.with_agent = sum(lab.agent is not None for lab in labels)
    return summary
