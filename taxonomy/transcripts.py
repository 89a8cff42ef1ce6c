"""Analysing failed agent transcripts (predictions with `transcript_steps`): the offline detectors
(taxonomy/detectors/transcript.py) or an LLM analyst reading the numbered steps in segments
(first_error.py). Each failure gets one `analyses` row naming the first decisive error's step,
agent and quote, and the category the analyst chose in the agent taxonomy — or, when no rule is
certain or the analyst's answers never resolved to a stored step, no step and Hard to Analyze,
with the reason. `analyze` (analyze.py) sends transcripts here and plain answers to stage 1.

The LLM path keeps analyze's guarantees: every request goes through the client (cache, journal,
--max-cost reservation, retries), an answer is committed with the analysis it produced, and the
answers of a chain (one per segment read, and the follow-ups that said what was wrong) are
journaled and cached as they arrive, so a re-run pays for none of them again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Callable

from store import write_session
from store.analysis import NO_MODEL_ERROR, Batch, cached_for_prompt, cut_off_answers, save_batch
from store.first_errors import run_formats, transcript_steps

from .catalog import AGENT_VERSION, HARD, Taxonomy
from .context import context_budget
from .detectors.transcript import VERSION as OFFLINE_VERSION
from .detectors.transcript import analyze as detect
from .first_error import (MAX_ATTEMPTS, TRANSCRIPT_PROMPT_VERSION, FirstError, Plan, check, first_error_schema,
                          follow_up, parse_first_error, plan)
from .llm import InvalidAnswer, LLMUnavailable, Writer, gather_all

OFFLINE = "offline"
CHUNK = 200  # transcripts read from the store at a time


def prompt_version(analyst: str) -> str:
    return OFFLINE_VERSION if analyst == OFFLINE else TRANSCRIPT_PROMPT_VERSION


@dataclass
class TranscriptCounts:
    """What a run did with transcripts, for its summary line."""

    selected: int = 0
    analysed: int = 0
    with_step: int = 0
    hard: int = 0  # no rule certain (offline) or no answer that resolved (LLM): Hard to Analyze
    no_model_error: int = 0
    segmented: int = 0  # read in several segments
    unanalysed: int = 0  # no valid answer (retries exhausted at the provider): a re-run tries again

    def text(self) -> str:
        if not self.selected:
            return ""
        parts = [f"{self.with_step} with a first error step"]
        if self.hard:
            parts.append(f"{self.hard} Hard to Analyze")
        if self.no_model_error:
            parts.append(f"{self.no_model_error} not a model error")
        if self.segmented:
            parts.append(f"{self.segmented} read in segments")
        if self.unanalysed:
            parts.append(f"{self.unanalysed} without a valid answer")
        return f"{self.analysed}/{self.selected} failed agent transcripts analysed now ({', '.join(parts)})"


def transcript_hash(rec: dict, steps: list[dict]) -> str:
    """Identity of a transcript's analysis input: the task, its answer and every step."""
    blob = json.dumps([rec.get("input_text"), rec.get("input_messages"), rec.get("output_text"), rec.get("instructions"),
                       [[s["step_index"], s.get("agent"), s.get("kind"), s.get("tool_name"), s.get("text"),
                         s.get("tool_arguments"), s.get("error")] for s in steps]],
                      sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _row(f: dict, analyst: str, version: str, ph: str, title: str, summary: str, criteria: list[dict] | None,
         key: str | None, no_model_error: str | None, context_note: str | None, step: int | None,
         agent: str | None, quote: str | None, n_steps: int, segments: dict | None, category: str | None) -> tuple:
    """A row of ANALYSIS_COLUMNS + STEP_COLUMNS (store/analysis.py)."""
    return (f["run_id"], f["instance_id"], f["train_trial_index"], analyst, version, ph, title, summary,
            json.dumps(criteria) if criteria is not None else None, key, no_model_error, context_note, step, agent,
            quote, n_steps, json.dumps(segments) if segments else None, category,
            AGENT_VERSION if category is not None else None)


def _chunks(rows: list, n: int = CHUNK):
    for i in range(0, len(rows), n):
        yield rows[i:i + n]


# ---------------------------------------------------------------- offline


def analyze_offline(path, transcripts: list[dict], counts: TranscriptCounts) -> None:
    """The detectors on each failed transcript; rows saved a chunk at a time."""
    for chunk in _chunks(transcripts):
        with write_session(path) as con:
            formats = run_formats(con, sorted({f["run_id"] for f in chunk}))
            loaded = [(f, transcript_steps(con, f["run_id"], f["instance_id"], f["train_trial_index"])) for f in chunk]
        batch = Batch(analyses=[_offline_row({**f, "source_format": formats.get(f["run_id"])}, steps, counts)
                                for f, steps in loaded])
        with write_session(path) as con:
            save_batch(con, batch)
        counts.analysed += len(chunk)


def _offline_row(f: dict, steps: list[dict], counts: TranscriptCounts) -> tuple:
    found = detect(steps, f)
    ph = transcript_hash(f, steps)
    if found is None:
        counts.hard += 1
        return _row(f, OFFLINE, OFFLINE_VERSION, ph, "No rule is certain about this transcript",
                    f"No offline rule fires with certainty on this transcript of {len(steps)} steps: its first decisive "
                    "error needs an LLM analyst (python -m taxonomy analyze --analyst MODEL) or a person.",
                    [], None, None, None, None, None, None, len(steps), None, HARD)
    counts.with_step += 1
    criteria = [{"criterion": found.criterion, "present_in_wrong": False, "quality": "incorrect", "evidence": found.quote,
                 "comment": f"offline transcript detector {found.detector}, step {found.step_index}: {found.summary}",
                 "evidence_verified": True if found.quote else None}]
    return _row(f, OFFLINE, OFFLINE_VERSION, ph, found.title, found.summary, criteria, None, None, None,
                found.step_index, found.agent, found.quote, len(steps), None, found.category)


# ---------------------------------------------------------------- LLM


@dataclass
class _Prepared:
    failure: dict
    plan: Plan
    ph: str


async def analyze_llm(path, analyst: str, transcripts: list[dict], counts: TranscriptCounts, client_for: Callable,
                      taxonomy: Taxonomy, *, context_tokens: int | None, log: Callable[[str], None],
                      bar: Callable[[int], None] = lambda n: None) -> None:
    """Each failed transcript read by the LLM analyst, segment by segment (first_error.py)."""
    writer = Writer(path)
    with write_session(path) as con:
        cached = cached_for_prompt(con, analyst, TRANSCRIPT_PROMPT_VERSION)
        cut_off = cut_off_answers(con, analyst, TRANSCRIPT_PROMPT_VERSION)
    client = client_for(analyst, writer, cached, cut_off)
    budget = context_budget(analyst, client.max_tokens, context_tokens)
    prepared = []
    for chunk in _chunks(transcripts):
        with write_session(path) as con:
            loaded = [(f, transcript_steps(con, f["run_id"], f["instance_id"], f["train_trial_index"])) for f in chunk]
        prepared += [_Prepared(f, plan(f, steps, taxonomy, budget), transcript_hash(f, steps)) for f, steps in loaded]
    split = sum(len(p.plan.segments) > 1 for p in prepared)
    if split:
        log(f"{split} transcript(s) exceed the {budget.describe()} and are read in overlapping segments, in order, "
            "until one holds the first decisive error (analyses.segments_read says which)")
    firsts = [p.plan.messages(p.plan.segments[0]) for p in prepared]
    estimates = [client.estimate_cost(m, "analysis") for m in firsts]
    most = sum(len(p.plan.segments) for p in prepared)
    if firsts and all(e is not None for e in estimates):
        log(f"{len(firsts)} transcript(s) to read: {len(firsts)} to {most} requests before follow-ups (one per segment "
            f"read), estimated cost ${sum(estimates):.4f} for the first segments (cached answers cost nothing)")
    elif firsts:
        log(f"{len(firsts)} transcript(s) to read: {len(firsts)} to {most} requests before follow-ups; litellm has no "
            f"price for {analyst}, so cost is not tracked")
    if any(p.plan.segments for p in prepared):
        await client.warm_up()
    schema = first_error_schema(taxonomy)
    writer.start()

    async def one(p: _Prepared) -> None:
        try:
            row = await _read(client, writer, analyst, p, schema, taxonomy, counts)
        except (InvalidAnswer, LLMUnavailable):
            counts.unanalysed += 1
            bar(1)
            return
        writer.put(row)
        counts.analysed += 1
        bar(1)

    try:
        await gather_all(one(p) for p in prepared)
    finally:
        await writer.close()


async def _read(client, writer: Writer, analyst: str, p: _Prepared, schema: dict, taxonomy: Taxonomy,
                counts: TranscriptCounts) -> Batch:
    """The segments of one transcript in order until one holds the error; the analysis as a
    Batch with the answer it came from (earlier answers of the chain are put to the writer as
    they arrive: they are paid for)."""
    f, pl = p.failure, p.plan
    read: list[dict] = []
    problems: list[str] = []
    last_key, last_row = None, None
    for segment in pl.segments:
        read.append({"segment": segment.number, "first_step": segment.first, "last_step": segment.last})
        messages = pl.messages(segment)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if last_row is not None:
                writer.put(Batch(cache=[last_row]))  # an answer of the chain that is not the final one
                last_row = None
            answer, last_key, last_row = await client.request(messages, schema, TRANSCRIPT_PROMPT_VERSION, "analysis",
                                                               parse_first_error)
            checked = check(answer, segment, pl, taxonomy)
            if checked.problem is None:
                break
            problems.append(f"segment {segment.number}, answer {attempt}: {checked.problem}")
            messages = follow_up(messages, client.cached.get(last_key) or answer.model_dump_json(), checked.problem,
                                 attempt + 1)
        else:
            return _batch(last_row, _abstain(f, analyst, p, read, problems, last_key, counts))
        if checked.found is not None:
            return _batch(last_row, _found(f, analyst, p, read, checked.found, last_key, counts))
        if segment is pl.segments[-1]:
            return _batch(last_row, _no_error(f, analyst, p, read, checked.no_model_error, last_key, counts))
    raise AssertionError("a transcript has at least one segment")


def _batch(cache_row: tuple | None, row: tuple) -> Batch:
    return Batch(cache=[cache_row] if cache_row else [], analyses=[row])


def _segments_read(p: _Prepared, read: list[dict]) -> dict | None:
    return {"segments": len(p.plan.segments), "read": read} if len(p.plan.segments) > 1 else None


def _note(p: _Prepared, read: list[dict], found: bool) -> str | None:
    notes = list(p.plan.notes)
    k = len(p.plan.segments)
    if k > 1:
        spans = ", ".join(f"{r['first_step']}–{r['last_step']}" for r in read)
        notes.append(f"read in {len(read)} of {k} overlapping segments (steps {spans})"
                     + ("; the first decisive error was in the last one read" if found else "; none held a decisive error"))
    return "; ".join(notes) or None


def _found(f, analyst, p: _Prepared, read, fe: FirstError, key, counts: TranscriptCounts) -> tuple:
    counts.with_step += 1
    counts.segmented += len(p.plan.segments) > 1
    criteria = [{"criterion": "The run's first decisive error", "present_in_wrong": False, "quality": "incorrect",
                 "evidence": fe.quote, "comment": f"step {fe.step}" + (f" ({fe.agent})" if fe.agent else ""),
                 "evidence_verified": True if fe.quote else None}]
    return _row(f, analyst, TRANSCRIPT_PROMPT_VERSION, p.ph, fe.error_title, fe.error_summary, criteria, key, None,
                _note(p, read, True), fe.step, fe.agent, fe.quote, p.plan.n_steps, _segments_read(p, read), fe.category)


def _no_error(f, analyst, p: _Prepared, read, reason: str | None, key, counts: TranscriptCounts) -> tuple:
    counts.no_model_error += 1
    counts.segmented += len(p.plan.segments) > 1
    reason = reason or "the analyst found no error"
    return _row(f, analyst, TRANSCRIPT_PROMPT_VERSION, p.ph, NO_MODEL_ERROR,
                f"The analyst found no decisive error in the transcript ({reason}).", [], key, reason,
                _note(p, read, False), None, None, None, p.plan.n_steps, _segments_read(p, read), None)


def _abstain(f, analyst, p: _Prepared, read, problems: list[str], key, counts: TranscriptCounts) -> tuple:
    counts.hard += 1
    counts.segmented += len(p.plan.segments) > 1
    return _row(f, analyst, TRANSCRIPT_PROMPT_VERSION, p.ph, "No verifiable first error step",
                f"The analyst's answers never named a step, agent and quote that the transcript holds "
                f"({MAX_ATTEMPTS} answers; {'; '.join(problems[-MAX_ATTEMPTS:])}), so no step is stored.",
                [], key, None, _note(p, read, False), None, None, None, p.plan.n_steps, _segments_read(p, read), HARD)
