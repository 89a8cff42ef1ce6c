"""Terminal-Bench `tb run` output: one folder per run, as its harness writes it
(terminal_bench/harness/harness.py, handlers/trial_handler.py `TrialPaths`):

    <run_id>/results.json          BenchmarkResults: results (one TrialResults per trial), n_resolved,
                                   resolved_ids, pass_at_k, accuracy
    <run_id>/run_metadata.json     RunMetadata: model_name, agent_name, dataset_name, dataset_version, ...
    <run_id>/<task_id>/<trial_name>/results.json   the trial's TrialResults: is_resolved, failure_mode,
                                   parser_results, instruction, tokens, times
    .../commands.txt               every `send_keys` of the trial's tmux sessions, one `repr(keys)` a line
    .../sessions/agent.log         the agent's terminal as tmux piped it (escape codes and all)
    .../panes/{pre-agent,post-agent,post-test}.txt   the screen before and after the agent, after the tests

A trial is one prediction: its task id is the instance, its attempt (`<task>.<k>-of-<n>.<run_id>`)
the trial index (k - 1), so the trials of one task share (dataset, instance_id). Verdict: the
harness's `is_resolved` (every test passed). A trial the harness could not test (is_resolved null,
`failure_mode` set: a test timeout, a parse error, an agent that crashed) counts as unresolved, as
in the harness's `accuracy` (n_resolved / every trial), which is checked.

Steps: the instruction, then the keys sent (the agent's as tool calls; the harness's own —
starting a recording, running the tests, ending the sessions — as system events), the agent's
terminal log as their result, the failure mode when there is one, and the screen after the tests.
The output is the screen the agent left. The model and dataset come from run_metadata.json, else
--model and --dataset. A trial file that cannot be read is named and its trial loads without it.

Pipeline: load the run's results → identity → per trial: verdict, then its steps from its folder.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path
from typing import Any, Iterator

from core.names import question_hash
from core.records import InstanceRecord, JudgeNote, ParsedRun, PredictionRecord, Skipped
from core.verdicts import HarnessAggregate, agreement

from .. import files
from ..errors import IngestError
from ..jsonio import expect, load_json, read_bytes
from ..options import ReadOptions
from ..source import Source
from ..transcript import Transcript
from ..walk import matching_files
from .agent import NeedsFlag, agent_run, binary_verdict_fields, require

FORMAT = "terminal-bench"
RESULTS = "results.json"
METADATA = "run_metadata.json"
VERDICT = binary_verdict_fields(
    "is_resolved", "terminal-bench is_resolved",
    "Terminal-Bench's is_resolved (every test passed); a trial it could not test counts as unresolved, "
    "as in its accuracy")
# BenchmarkResults writes its computed fields after the list of trials, which can be long
RUN_KEYS = (b'"n_resolved"', b'"resolved_ids"', b'"accuracy"')
SCAN_BYTES = 256 << 20
# a file inside a run folder is at most this deep: <run>/<task>/<trial>/agent-logs/episode-0/x
RUN_DEPTH = 5
# TrialHandler: f"{task_id}.{attempt}-of-{n_attempts}.{run_id}", attempt counted from 1
TRIAL_NAME = re.compile(r"\.(?P<attempt>\d+)-of-(?P<of>\d+)(?:\.|$)")
NO_FAILURE = ("unset", "none")
# tmux key names the harness and its agents send (tmux send-keys): shown as <Enter>, not as text
KEY_NAME = re.compile(r"(Enter|KPEnter|Escape|Tab|BTab|BSpace|Space|Up|Down|Left|Right|Home|End|PageUp|PageDown|"
                      r"PPage|NPage|DC|IC|F\d{1,2}|[CMS]-\S+|\^.)")
# what the harness itself sends (TmuxSession.start / stop, Harness._run_tests): /logs is
# DockerComposeManager.CONTAINER_SESSION_LOGS_PATH, /tests its CONTAINER_TEST_DIR
RECORDING = "asciinema rec --stdin "
TESTS = re.compile(r"^bash /tests/run-tests\.sh")
# terminal escape sequences (CSI, OSC, two-character) in a tmux pipe-pane log
ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _is_run_results(path: Path) -> bool:
    if path.name != RESULTS:
        return False
    head = (files.head(path, 4096) or b"").lstrip()
    if head[:1] != b"{" or b'"results"' not in head:
        return False
    return set(RUN_KEYS) <= files.holds(path, RUN_KEYS, SCAN_BYTES)


def _in_run(path: Path) -> bool:
    """A run's results.json, or a file inside a run folder (a trial's files, run.log, tb.lock)."""
    return _run_of(path) is not None


def _run_of(path: Path) -> Path | None:
    if _is_run_results(path):
        return path.parent
    for folder in list(path.parents)[:RUN_DEPTH]:
        if _is_run_results(folder / RESULTS):
            return folder
    return None


def looks_like(path: Path) -> bool:
    if path.is_dir():
        return bool(matching_files(path, _is_run_results))
    return path.is_file() and _in_run(path)


def _runs(path: Path) -> list[Path]:
    if path.is_dir():
        return [file.parent for file in matching_files(path, _is_run_results)]
    run = _run_of(path)
    return [run] if run else []


def count_runs(path: Path) -> int:
    return len(_runs(path))


def read(path: Path, options: ReadOptions) -> Iterator[ParsedRun | Skipped]:
    runs = _runs(path)
    if not runs:
        raise IngestError(f"{path}: no Terminal-Bench run here (no results.json with accuracy, n_resolved and "
                          "resolved_ids in it or its subfolders)")
    for run_dir in runs:
        skipped: list[Skipped] = []
        try:
            parsed = read_run(run_dir, options, skipped)
        except NeedsFlag as exc:
            if path.is_file():
                raise
            yield Skipped(path=str(run_dir), reason=exc.reason)
            continue
        yield from skipped
        yield parsed


# ---------------------------------------------------------------- the run


def read_run(run_dir: Path, options: ReadOptions, skipped: list[Skipped]) -> ParsedRun:
    """One run; `skipped` collects the trial files that could not be read."""
    hasher = hashlib.sha256()
    where = run_dir / RESULTS
    results = expect(load_json(where, hasher), dict, str(where))
    trials = expect(results.get("results"), list, f"{where}: results")
    metadata = _metadata(run_dir, hasher, skipped)
    model = require(options.model or metadata.get("model_name"), run_dir,
                    "the Terminal-Bench run names no model (no model_name in run_metadata.json)", "--model NAME")
    dataset = require(options.dataset or metadata.get("dataset_name"), run_dir,
                      "the Terminal-Bench run names no dataset (no dataset_name in run_metadata.json)", "--dataset NAME")
    transcript = Transcript()
    instances: dict[str, InstanceRecord] = {}
    predictions: list[PredictionRecord] = []
    seen: dict[tuple[str, int], str] = {}
    notes: list[str] = []
    listed: set[Path] = set()
    for n, entry in enumerate(trials):
        at = f"{where}: results[{n}]"
        trial = _Trial.of(expect(entry, dict, at), at)
        key = (trial.task_id, trial.index(trials))
        if key in seen:
            raise IngestError(f"{at}: trial {trial.name!r} of task {trial.task_id!r} has the attempt of "
                              f"{seen[key]!r}")
        seen[key] = trial.name
        folder = run_dir / trial.task_id / trial.name
        listed.add(folder)
        notes.extend(_cross_check(trial, folder, hasher, skipped))
        instances.setdefault(trial.task_id, InstanceRecord(
            instance_id=trial.task_id, raw_instance_id=trial.task_id, input_text=trial.instruction,
            question_hash=question_hash(trial.instruction)))
        predictions.append(_prediction(trial, key[1], folder, transcript, hasher, skipped))
    skipped.extend(_unlisted(run_dir, listed))
    notes.extend(_unfinished(run_dir, metadata, len(trials)))
    harness = _harness(results, where, predictions)
    settings = {"agent": metadata.get("agent_name"), "dataset_version": metadata.get("dataset_version"),
                "n_attempts": metadata.get("n_attempts"), "run_id": metadata.get("run_id") or run_dir.name}
    return agent_run(fmt=FORMAT, key=str(run_dir.resolve()), path=run_dir, content_hash=hasher.hexdigest(),
                     model=model, dataset_raw=dataset, options=options, instances=list(instances.values()),
                     predictions=predictions, transcript=transcript, verdict=VERDICT, notes=notes,
                     settings={k: v for k, v in settings.items() if isinstance(v, (str, int)) and not isinstance(v, bool)},
                     harness=harness)


def _metadata(run_dir: Path, hasher, skipped: list[Skipped]) -> dict:
    """run_metadata.json (RunMetadata), or {} when absent or unreadable (then named)."""
    path = run_dir / METADATA
    if not path.is_file():
        return {}
    try:
        return expect(load_json(path, hasher), dict, str(path))
    except IngestError as exc:
        skipped.append(Skipped(path=str(path), reason=_unread(exc, path)))
        return {}


def _unread(exc: IngestError, path: Path) -> str:
    why = exc.message.removeprefix(str(path))
    at = re.match(r":(\d+)(?::(\d+))?:\s*", why)  # path:line: or path:line:column:
    if at:
        why = f"line {at[1]}{f', column {at[2]}' if at[2] else ''}: {why[at.end():]}"
    why = why.lstrip(": ")
    return f"a Terminal-Bench trial file that cannot be read ({why}): its trial loads without it"


def _harness(results: dict, where: Path, predictions: list[PredictionRecord]) -> dict:
    """The run's `accuracy` (BenchmarkResults: n_resolved over every trial) against the verdicts."""
    accuracy = results.get("accuracy")
    if isinstance(accuracy, bool) or not isinstance(accuracy, (int, float)):
        return {}
    aggregate = HarnessAggregate("accuracy", None, float(accuracy), len(predictions))
    return agreement(aggregate, [float(p.is_correct) for p in predictions], len(predictions), headline="accuracy")


class _Trial:
    """One TrialResults entry of the run's results.json."""

    def __init__(self, entry: dict, name: str, task_id: str, where: str) -> None:
        self.entry, self.name, self.task_id, self.where = entry, name, task_id, where
        resolved = entry.get("is_resolved")
        if resolved is not None and not isinstance(resolved, bool):
            raise IngestError(f"{where}: is_resolved: expected true, false or null, found {resolved!r}")
        self.is_resolved: bool | None = resolved
        mode = entry.get("failure_mode")
        self.failure_mode = mode if isinstance(mode, str) and mode else "unset"
        instruction = entry.get("instruction")
        self.instruction = instruction if isinstance(instruction, str) else None

    @classmethod
    def of(cls, entry: dict, where: str) -> "_Trial":
        names = []
        for key in ("trial_name", "task_id"):
            value = entry.get(key)
            # the two name folders of the run: never a path of their own
            if not isinstance(value, str) or not value.strip() or value in (".", "..") or "/" in value or "\\" in value:
                raise IngestError(f"{where}: {key}: expected a name, found {value!r}")
            names.append(value)
        return cls(entry, names[0], names[1], where)

    def index(self, trials: list) -> int:
        """The trial index: its attempt (counted from 1 in its name) less one; for a name of
        another pattern, its place among the task's trials by name."""
        match = TRIAL_NAME.search(self.name[len(self.task_id):]) if self.name.startswith(self.task_id) else None
        if match:
            return int(match["attempt"]) - 1
        names = sorted(e.get("trial_name") for e in trials if isinstance(e, dict) and e.get("task_id") == self.task_id
                       and isinstance(e.get("trial_name"), str))
        return names.index(self.name)


def _cross_check(trial: _Trial, folder: Path, hasher, skipped: list[Skipped]) -> list[str]:
    """The trial folder's own results.json (the harness rebuilds a resumed run from these) says
    what the run's does; a difference is said, the run's (what its accuracy counts) is kept."""
    path = folder / RESULTS
    if not path.is_file():
        return []
    try:
        own = expect(load_json(path, hasher), dict, str(path))
    except IngestError as exc:
        skipped.append(Skipped(path=str(path), reason=_unread(exc, path)))
        return []
    if own.get("is_resolved") != trial.is_resolved:
        return [f"{path}: is_resolved {own.get('is_resolved')!r}, but the run's results.json says "
                f"{trial.is_resolved!r} for this trial: the run's, which its accuracy counts, is kept"]
    return []


def _unlisted(run_dir: Path, listed: set[Path]) -> list[Skipped]:
    """Trial folders with a results.json that the run's results.json does not list (a trial that
    finished after the run last wrote it): not in the harness's accuracy, so not loaded."""
    out = []
    for task in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        for trial in sorted(p for p in task.iterdir() if p.is_dir()):
            if trial not in listed and (trial / RESULTS).is_file():
                out.append(Skipped(path=str(trial), reason="a Terminal-Bench trial the run's results.json does not "
                                   "list (not in its accuracy): not loaded"))
    return out


def _unfinished(run_dir: Path, metadata: dict, n_trials: int) -> list[str]:
    tasks, attempts = metadata.get("task_ids"), metadata.get("n_attempts")
    if not isinstance(tasks, list) or not isinstance(attempts, int) or isinstance(attempts, bool):
        return []
    planned = len(tasks) * attempts
    if n_trials >= planned:
        return []
    return [f"{run_dir}: results.json holds {n_trials} of the {planned} trials the run was set to make "
            f"({len(tasks)} tasks × {attempts} attempts): an unfinished run, its accuracy over those {n_trials}"]


# ---------------------------------------------------------------- one trial


def _prediction(trial: _Trial, index: int, folder: Path, transcript: Transcript, hasher,
                skipped: list[Skipped]) -> PredictionRecord:
    iid = trial.task_id
    if trial.instruction:
        transcript.add(iid, index, "message", where=trial.where, role="user", text=trial.instruction,
                       source_ref="results.json instruction")
    commands = folder / "commands.txt"
    text = _text(commands, hasher, skipped)
    try:
        sent = _commands(text, commands) if text is not None else []
    except IngestError as exc:
        skipped.append(Skipped(path=str(commands), reason=_unread(exc, commands)))
        sent = []
    for lineno, keys, typed, harness in sent:
        where, ref = f"{commands}:{lineno}", f"commands.txt:{lineno}"
        if harness:
            transcript.add(iid, index, "system event", where=where, role="system", agent="harness", text=typed,
                           source_ref=ref)
        else:
            transcript.add(iid, index, "tool call", where=where, role="assistant", tool_name="terminal",
                           arguments={"keys": keys}, text=typed, source_ref=ref)
    log = _text(folder / "sessions" / "agent.log", hasher, skipped)
    if log is not None:
        transcript.add(iid, index, "tool result", where=folder / "sessions" / "agent.log", role="environment",
                       tool_name="terminal", text=_plain(log), source_ref="sessions/agent.log")
    failed = trial.failure_mode not in NO_FAILURE
    if failed:
        transcript.add(iid, index, "error", where=trial.where, role="system", agent="harness",
                       text=f"failure mode: {trial.failure_mode}", error=trial.failure_mode, source_ref="failure_mode")
    after_tests = _text(folder / "panes" / "post-test.txt", hasher, skipped)
    if after_tests is not None:
        transcript.add(iid, index, "system event", where=folder / "panes" / "post-test.txt", role="system",
                       agent="harness", text=after_tests, source_ref="panes/post-test.txt")
    screen = _text(folder / "panes" / "post-agent.txt", hasher, skipped)
    entry = trial.entry
    note = None
    if trial.is_resolved is None:
        note = (f"the harness has no test result for this trial (failure mode {trial.failure_mode}): "
                "Terminal-Bench counts it as unresolved")
    return PredictionRecord(
        instance_id=iid, train_trial_index=index, output_text=screen, score=float(bool(trial.is_resolved)),
        is_correct=bool(trial.is_resolved), verdict_note=note,
        error_message=f"failure mode: {trial.failure_mode}" if failed else None,
        judge_notes=_tests(entry.get("parser_results")),
        output_tokens=_count(entry.get("total_output_tokens")),
    )


def _text(path: Path, hasher, skipped: list[Skipped]) -> str | None:
    """A trial's text file, or None when absent; one that cannot be read is named."""
    if not path.is_file():
        return None
    try:
        # a terminal's screen and log hold whatever bytes programs printed: bytes that are not
        # UTF-8 become U+FFFD rather than cost the trial its steps
        return read_bytes(path, hasher).decode("utf-8", errors="replace")
    except IngestError as exc:
        skipped.append(Skipped(path=str(path), reason=_unread(exc, path)))
        return None


def _commands(text: str, path: Path) -> list[tuple[int, list[str], str, bool]]:
    """commands.txt as (line number, keys, keys as typed, whether the harness sent them): one
    `repr(keys)` a line (TmuxSession.send_keys), keys a text or a list of texts, read as Python
    literals, never evaluated. The harness's own keys: a recording started and the `clear` after
    it, the tests run, and everything after them (the sessions ended)."""
    out = []
    testing, previous = False, ""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        keys = _keys(line, f"{path}:{lineno}")
        typed = _typed(keys)
        testing = testing or bool(TESTS.match(typed))
        harness = testing or typed.startswith(RECORDING) or (previous.startswith(RECORDING) and typed == "clear<Enter>")
        out.append((lineno, keys, typed, harness))
        previous = typed
    return out


def _keys(line: str, where: str) -> list[str]:
    try:
        value = ast.literal_eval(line.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise IngestError(f"{where}: not the Python literal of the keys sent (a text or a list of texts)") from None
    keys = [value] if isinstance(value, str) else value
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise IngestError(f"{where}: expected the keys sent (a text or a list of texts), found {type(value).__name__}")
    return keys


def _typed(keys: list[str]) -> str:
    """The keys as typed: text as it is, tmux key names (Enter, C-c) in angle brackets; a key
    that ends in a newline runs its command as Enter does."""
    return "".join(f"<{k}>" if KEY_NAME.fullmatch(k) else k.replace("\n", "<Enter>") for k in keys)


def _plain(log: str) -> str:
    """A terminal log without its escape sequences and carriage returns."""
    return ESCAPES.sub("", log).replace("\r\n", "\n").replace("\r", "\n")


def _tests(parser_results: Any) -> list[JudgeNote] | None:
    """The tests' own verdicts (parser_results: test name → passed/failed)."""
    if not isinstance(parser_results, dict) or not parser_results:
        return None
    return [JudgeNote(judge="terminal-bench tests", criterion=str(name), score=str(status))
            for name, status in parser_results.items()]


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


SOURCE = Source(FORMAT, looks_like, read, count_runs,
                "a Terminal-Bench run folder (results.json with accuracy, n_resolved and resolved_ids)")
