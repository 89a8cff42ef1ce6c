"""`analyze`: choose failures → stage 1 (offline or LLM analyst) → stage 3 (classify unique titles).

Slow work (LLM calls) never holds the database: the store is read once up front in a short
session, then a single writer task commits each result as it arrives. A re-run skips every
failure that already has an analysis by this analyst and prompt version, reuses the analysis of
an identical (input, output) pair, and serves from the cache any request already answered.

A run holds the store's run lock from start to end (runlock.py), and before it reads anything it
stores the answers an earlier run journaled but could not store (journal.py).

Failures with an agent transcript (`transcript_steps`) are analysed by transcripts.py instead:
their first decisive error step, under the agent taxonomy (erroratlas-agents-v1), whatever
taxonomy the plain answers use.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from core.counts import TO_ANALYSE
from store import StoreError, writable_db_path, write_session
from store.analysis import (
    NO_MODEL_ERROR,
    Batch,
    analyses_of,
    cached_for_prompt,
    cached_responses,
    classifications_of,
    correct_outputs,
    cut_off_answers,
    failures,
    models_and_datasets,
    record_taxonomy,
    recorded_taxonomy,
    save_batch,
    title_summaries,
)
from store.batches import pending_batches
from store.first_errors import transcript_lengths

from . import offline
from . import transcripts as agent_runs
from .batch import BatchSession, check_provider
from .budget import Budget, BudgetExhausted, register_prices, require_prices
from .catalog import AGENT_VERSION, Taxonomy, TaxonomyError, load_taxonomy, shipped
from .classify import OFFLINE, StageResult, classify_llm, classify_offline, offline_name
from .context import context_budget
from .first_error import TRANSCRIPT_PROMPT_VERSION, parse_first_error
from .journal import recover
from .llm import InvalidAnswer, LLMClient, LLMUnavailable, Stats, Writer, gather_all
from .prompts import (
    ANALYSIS_PROMPT_VERSION,
    ANALYSIS_SCHEMA,
    CLASSIFY_PROMPT_VERSION,
    analysis_messages,
    classify_messages,
    parse_analysis,
    parse_classification,
)
from .quotes import check_criteria
from .runlock import run_lock
from .select import check_names, failure_key, group_pairs, sample
from .settings import LLMSettings
from .title_classifier import check_supports


@dataclass
class Summary:
    selected: int = 0
    previously_done: int = 0
    analysed_now: int = 0
    unanalysed: int = 0
    titles_classified: int = 0  # by the title classifier
    titles_filed: int = 0  # filed under the category their detector gave (the offline analyst)
    fallbacks: int = 0
    unclassified: int = 0
    classifier: str = ""
    estimated_cost: float | None = None
    recovered: int = 0
    budget: Budget | None = None
    stats: Stats = field(default_factory=Stats)
    seconds: float = 0.0
    analysis_seconds: float = 0.0
    stopped: str | None = None
    batches: str = ""  # what went through the batch API (--batch / --resume)
    no_model_error: int = 0  # failures the analyst found not to be the model's fault
    quotes: int = 0  # evidence quotes in the answers of this run
    unverified_quotes: int = 0  # of those, not in the output verbatim
    context_cut: int = 0  # failures whose prompt was cut to fit the analyst's context
    transcripts: agent_runs.TranscriptCounts = field(default_factory=agent_runs.TranscriptCounts)

    @property
    def analysed(self) -> int:
        return self.previously_done + self.analysed_now

    def line(self) -> str:
        s = self.stats
        text = (
            f"{self.analysed}/{self.selected} {TO_ANALYSE.name} done ({self.analysed_now} now"
            + (f", {self.unanalysed} without a valid answer" if self.unanalysed else "")
            + ")"
            + (f"; {self.no_model_error} found not to be a model error" if self.no_model_error else "")
            + (f"; {self.unverified_quotes} of {self.quotes} evidence quotes not in the output verbatim"
               if self.unverified_quotes else "")
            + (f"; {self.context_cut} prompts cut to fit the analyst's context" if self.context_cut else "")
            + (f"; {self.transcripts.text()}" if self.transcripts.selected else "")
            + (f"; {self.titles_filed} title{'s' if self.titles_filed != 1 else ''} filed by their detectors"
               if self.titles_filed else "")
            + f"; {self.titles_classified} titles classified by {self.classifier}"
            + (f" ({self.fallbacks} fell back to Other)" if self.fallbacks else "")
            + (f", {self.unclassified} left unclassified" if self.unclassified else "")
            + f"; {calls_text(s, self.recovered)};"
            + f" cost ${s.cost_usd:.4f}{self._cost_note()}; "
            + (f"{self.batches}; " if self.batches else "")
            + f"{self.seconds:.1f} s"
        )
        return text

    def _cost_note(self) -> str:
        notes = []
        b = self.budget
        if b is not None and b.at_risk_requests:
            notes.append(f"plus up to ${b.at_risk:.4f} for {b.at_risk_requests} unanswered request(s) the provider may have billed")
        if self.stats.cut_off:
            notes.append(f"{self.stats.cut_off} answer(s) cut off at --max-tokens")
        if self.stats.usage_missing:
            notes.append(f"{self.stats.usage_missing} answer(s) came without token usage from the provider, "
                         "charged at their UTF-8 byte bound")
        return f" ({'; '.join(notes)})" if notes else ""

    def classify_line(self) -> str:
        s = self.stats
        return (
            f"{self.titles_classified}/{self.selected} titles classified by {self.classifier}"
            + (f" ({self.fallbacks} fell back to Other)" if self.fallbacks else "")
            + f"; {s.requests} requests sent, {s.cache_hits} cache hits"
            + (f", {self.recovered} answers recovered from an earlier run's journal" if self.recovered else "")
            + ";"
            + f" tokens {s.prompt_tokens} in / {s.completion_tokens} out; cost ${s.cost_usd:.4f}; {self.seconds:.1f} s"
        )


def calls_text(s: Stats, recovered: int) -> str:
    """What a run sent and received, for its summary line."""
    return (
        f"{s.requests} requests sent"
        + (f" ({s.failed_requests} failed and retried)" if s.failed_requests else "")
        + f", {s.cache_hits} cache hits"
        + (f", {recovered} answers recovered from an earlier run's journal" if recovered else "")
        + f"; tokens {s.prompt_tokens} in / {s.completion_tokens} out"
    )


def ensure_taxonomy(con, tax: Taxonomy) -> None:
    """Record the taxonomy on first use; refuse a file that reuses a recorded version for other categories."""
    recorded = recorded_taxonomy(con, tax.version)
    if recorded is None:
        record_taxonomy(con, tax.version, tax.name, tax.source, tax.categories_json())
    elif json.loads(recorded) != json.loads(tax.categories_json()):
        raise TaxonomyError(
            f"{tax.source}: taxonomy version {tax.version!r} is already recorded with different categories; "
            "a version never changes, so give the changed taxonomy a new version"
        )


def _bar(total: int, desc: str, unit: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not enabled, dynamic_ncols=True)


def _analysis_row(f: dict, analyst: str, prompt_version: str, ph: str, title: str, summary: str, criteria: str | None,
                  key: str | None, no_model_error: str | None = None, context_note: str | None = None) -> tuple:
    """A row of ANALYSIS_COLUMNS."""
    return (f["run_id"], f["instance_id"], f["train_trial_index"], analyst, prompt_version, ph, title, summary, criteria,
            key, no_model_error, context_note)


def analyze(
    db=None,
    analyst: str = OFFLINE,
    *,
    classifier: str | None = None,
    taxonomy_file: str | None = None,
    sample_ratio: float | None = None,
    models: Sequence[str] = (),
    datasets: Sequence[str] = (),
    settings: LLMSettings = LLMSettings(),
    progress: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> Summary:
    """Analyse the failures of `models` on `datasets` (all when empty; `sample_ratio` of each
    (model, dataset) pair) with `analyst`, and classify their titles with `classifier` under the
    taxonomy of `taxonomy_file`. `settings`: how the LLMs are called (settings.py): `batch` sends
    through the provider's batch API, `resume` collects the batches an earlier run submitted
    (taxonomy/batch.py), `retry_cut_off` asks again the prompts whose answers an earlier run got
    cut off at max_tokens."""
    started = time.perf_counter()
    tax = load_taxonomy(taxonomy_file)
    classifier = classifier or (OFFLINE if analyst == OFFLINE else analyst)
    if classifier == OFFLINE:
        check_supports(tax)
    if settings.batch_size < 1:
        raise TaxonomyError(f"--batch-size must be at least 1, got {settings.batch_size}")
    if settings.batch and analyst == OFFLINE and classifier == OFFLINE:
        raise TaxonomyError("--batch sends requests through an LLM provider's batch API; the offline analyst sends none")
    if settings.batch:
        for model in sorted({analyst, classifier} - {OFFLINE}):
            check_provider(model)
    path = writable_db_path(db)
    if not path.exists():
        raise StoreError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    register_prices(dict(settings.prices or {}))
    require_prices(sorted({analyst, classifier} - {OFFLINE}), settings.max_cost)
    classifier_name = offline_name() if classifier == OFFLINE else classifier
    summary = Summary(classifier=classifier_name, budget=Budget(settings.max_cost))
    run = _Run(path, analyst, classifier, tax, summary, settings, progress, log)

    with run_lock(path):
        summary.recovered = _recover(path, log)
        _analyze(run, models, datasets, sample_ratio)
    summary.seconds = time.perf_counter() - started
    return summary


@dataclass(frozen=True)
class _Run:
    """What the stages of one `analyze` run share."""

    path: Path
    analyst: str
    classifier: str
    tax: Taxonomy
    summary: Summary
    settings: LLMSettings
    progress: bool
    log: Callable[[str], None]

    @property
    def prompt_version(self) -> str:
        """The prompt version of the analyses of plain answers."""
        return offline.VERSION if self.analyst == OFFLINE else ANALYSIS_PROMPT_VERSION


def _recover(path, log) -> int:
    stored, unreadable = recover(path)
    if stored or unreadable:
        log(f"stored {stored} answer(s) an earlier run had paid for but could not store"
            + (f"; {unreadable} journal line(s) unreadable (cut short by a crash, or not of the journal's "
               "shape) were skipped" if unreadable else ""))
    return stored


def _analyze(run: _Run, models: Sequence[str], datasets: Sequence[str], sample_ratio: float | None) -> None:
    path, analyst, classifier, tax, summary = run.path, run.analyst, run.classifier, run.tax, run.summary
    prompt_version = run.prompt_version
    with write_session(path) as con:
        has_pending = bool(pending_batches(con))
        known_models, known_datasets = models_and_datasets(con)
        if not known_models:
            raise StoreError(f"{path}: no ingested runs; load logs with `python -m ingest PATH`")
        check_names("model", models, known_models)
        check_names("dataset", datasets, known_datasets)
        ensure_taxonomy(con, tax)
        chosen = sample(failures(con, models, datasets), sample_ratio)
        # agent transcripts go to their own analyst, under the agent taxonomy
        with_steps = transcript_lengths(con, sorted({f["run_id"] for f in chosen}))
        transcripts = [f for f in chosen if failure_key(f) in with_steps]
        chosen = [f for f in chosen if failure_key(f) not in with_steps]
        agent_tax = shipped(AGENT_VERSION)
        if transcripts:
            ensure_taxonomy(con, agent_tax)
        transcripts_done = {d["key"] for d in analyses_of(con, analyst, agent_runs.prompt_version(analyst))}
        done = analyses_of(con, analyst, prompt_version)
        correct = correct_outputs(con, sorted({f["dataset"] for f in chosen})) if analyst != OFFLINE else {}
        classified = classifications_of(con, tax.version, summary.classifier)
        # the categories the offline detectors gave their titles themselves (filed under the analyst)
        filed = classifications_of(con, tax.version, OFFLINE) if analyst == classifier == OFFLINE else {}
    classified = {**filed, **classified}

    summary.selected = len(chosen) + len(transcripts)
    summary.previously_done = sum(1 for f in transcripts if failure_key(f) in transcripts_done)
    transcripts = [f for f in transcripts if failure_key(f) not in transcripts_done]
    summary.transcripts.selected = len(transcripts)
    done_by_key = {d["key"]: d for d in done}
    done_by_pair = {d["pair_hash"]: d for d in done}
    # titles to classify: those of model errors (a failure that is not the model's fault has none)
    title_of: dict[tuple, str] = {failure_key(f): done_by_key[failure_key(f)]["error_title"] for f in chosen
                                  if failure_key(f) in done_by_key and done_by_key[failure_key(f)]["no_model_error"] is None}
    summary.previously_done += sum(1 for f in chosen if failure_key(f) in done_by_key)
    pending = [f for f in chosen if failure_key(f) not in done_by_key]

    # an identical (input, output) pair analysed before (e.g. under another sample) is reused
    reuse = Batch()
    groups: dict[str, list[dict]] = {}
    for ph, members in group_pairs(pending).items():
        prior = done_by_pair.get(ph)
        if prior is None:
            groups[ph] = members
            continue
        for f in members:
            reuse.analyses.append(_analysis_row(f, analyst, prompt_version, ph, prior["error_title"], prior["error_summary"],
                                                prior["required_criteria"], prior["cache_key"], prior["no_model_error"],
                                                prior["context_note"]))
            if prior["no_model_error"] is None:
                title_of[failure_key(f)] = prior["error_title"]
    if reuse:
        with write_session(path) as con:
            save_batch(con, reuse)
        summary.analysed_now += len(reuse.analyses)

    if analyst == OFFLINE:
        batch = Batch()
        own: dict[str, str] = {}  # title → the category its detector gave, where it gave one
        for ph, members in groups.items():
            found = offline.analyze(members[0])
            criteria = json.dumps(offline.criteria(found, members[0]))
            for f in members:
                batch.analyses.append(_analysis_row(f, analyst, prompt_version, ph, found.title, found.summary, criteria, None,
                                                    found.no_model_error))
                if found.no_model_error is not None:  # not an error: no category to file it under
                    summary.no_model_error += 1
                elif found.category is not None and classifier == OFFLINE:
                    own[found.title] = found.category
                else:  # a title in a judge's words, or an LLM classifier asked for every title
                    title_of[failure_key(f)] = found.title
        # a detector's category is its title's classification by the analyst itself: the title
        # classifier files only the titles that come without one
        own = {t: c for t, c in own.items() if filed.get(t, (None,))[0] != c}
        batch.classifications += [(t, tax.version, OFFLINE, c, False, None) for t, c in own.items()]
        classified.update({t: (c, False) for t, c in own.items()})
        summary.titles_filed += len(own)
        if batch:
            with write_session(path) as con:
                save_batch(con, batch)
        summary.analysed_now += len(batch.analyses)
        groups = {}
        agent_runs.analyze_offline(path, transcripts, summary.transcripts)
        summary.analysed_now += summary.transcripts.analysed
        transcripts = []

    needs_llm = bool(groups) or classifier != OFFLINE or bool(transcripts)
    settings = run.settings
    if needs_llm or (settings.resume and has_pending):
        session = None
        if settings.batch or settings.resume or has_pending:
            # without --resume a store with uncollected batches is refused (open() says so)
            session = BatchSession(path, summary.budget, submit=settings.batch, resume=settings.resume,
                                   poll_s=settings.poll_interval, log=run.log,
                                   parsers={ANALYSIS_PROMPT_VERSION: parse_analysis,
                                            CLASSIFY_PROMPT_VERSION: parse_classification,
                                            TRANSCRIPT_PROMPT_VERSION: parse_first_error})
        asyncio.run(_run_llm(run, groups, correct, title_of, classified, transcripts, agent_tax, session))
    else:
        _classify_offline_titles(run, title_of, classified)


def _classify_offline_titles(run: _Run, title_of: dict, classified: dict) -> None:
    path, tax, summary = run.path, run.tax, run.summary
    todo = sorted(set(title_of.values()) - set(classified))
    with _bar(len(todo), "classifying", "title", run.progress and bool(todo)) as bar:
        cats = classify_offline(todo, tax)
        bar.update(len(todo))
    if cats:
        with write_session(path) as con:
            save_batch(con, Batch(classifications=[(t, tax.version, summary.classifier, c, False, None) for t, c in cats.items()]))
    # on top of the titles their detectors filed
    summary.titles_classified += len(cats)


async def _run_llm(run: _Run, groups: dict[str, list[dict]], correct: dict, title_of: dict, classified: dict,
                   transcripts: list[dict], agent_tax: Taxonomy, session: BatchSession | None) -> None:
    summary = run.summary
    clients: dict[str, LLMClient] = {}

    def client_for(model: str, writer: Writer, cached: dict[str, str], cut_off: dict[str, int | None]) -> LLMClient:
        # one client per model, so both stages share its semaphore and statistics; one budget
        # for the run, so the limit holds for analyst and classifier together
        if model not in clients:
            clients[model] = LLMClient(model, writer, budget=summary.budget, cached=cached,
                                       **run.settings.client_options())
        client = clients[model]
        client.writer = writer
        client.batch = session
        client.cached.update(cached)
        client.cut_off.update(cut_off)
        return client

    try:
        if session is not None:
            await session.open()
        try:
            if groups:
                await _stage1(run, groups, correct, title_of, client_for)
            if transcripts:
                await _transcripts(run, transcripts, client_for, agent_tax)
            if run.classifier != OFFLINE:
                await _stage3(run, title_of, classified, client_for)
        except BudgetExhausted:
            pass
        if session is not None:
            # every batch submitted is collected before the run ends (it is paid for)
            await session.close()
            summary.batches = session.line()
        # also when the last request was the one billed past its reservation
        if summary.budget.stopped is not None:
            summary.stopped = summary.budget.message()
        if run.classifier == OFFLINE:
            # free, so the titles of a run stopped by the budget are classified too
            _classify_offline_titles(run, title_of, classified)
    except BaseException:
        if session is not None:
            session.abandon()  # what was submitted stays recorded for --resume
        raise
    finally:
        for c in clients.values():
            for name in vars(summary.stats):
                setattr(summary.stats, name, getattr(summary.stats, name) + getattr(c.stats, name))


async def _stage1(run: _Run, groups: dict[str, list[dict]], correct: dict, title_of: dict,
                  client_for: Callable) -> None:
    path, analyst, summary, log = run.path, run.analyst, run.summary, run.log
    batch_size, max_cost = run.settings.batch_size, run.settings.max_cost
    writer = Writer(path)
    client = client_for(analyst, writer, {}, {})
    budget = context_budget(analyst, client.max_tokens, run.settings.context_tokens)
    prepared = []
    for ph, members in groups.items():
        first = members[0]
        others = [c for c in correct.get((first["dataset"], first["instance_id"]), []) if c[0] != first["model"]]
        prepared.append((ph, members, *analysis_messages(first, others, budget)))
    cut = sum(len(m) for _, m, _, note in prepared if note)
    if cut:
        log(f"{cut} failures' prompts exceed the {budget.describe()} and are cut (largest fields first, "
            "head and tail kept; analyses.context_note says what was cut)")

    keys = [client.key(ANALYSIS_PROMPT_VERSION, msgs, ANALYSIS_SCHEMA) for _, _, msgs, _ in prepared]
    with write_session(path) as con:
        cached = cached_responses(con, keys)
        cut_off = cut_off_answers(con, analyst, ANALYSIS_PROMPT_VERSION)
    client.cached.update(cached)
    client.cut_off.update(cut_off)
    skipped = set() if client.retry_cut_off else set(cut_off)

    to_send = [msgs for (_, _, msgs, _), k in zip(prepared, keys) if k not in cached and k not in skipped]
    estimates = [client.estimate_cost(m, "analysis") for m in to_send]
    if to_send and all(e is not None for e in estimates):
        n_batches = math.ceil(len(groups) / batch_size)
        per_batch = client.estimate_cost(classify_messages(run.tax, ["x"] * batch_size), "classification") or 0
        summary.estimated_cost = sum(estimates) + n_batches * per_batch
        log(f"{len(to_send)} analysis requests to send (+ ~{n_batches} classification batches), estimated cost ${summary.estimated_cost:.4f}"
            + (f"; each request reserves its worst case at --max-tokens {client.max_tokens} from --max-cost ${max_cost:.4f}" if max_cost is not None else ""))
    elif to_send:
        log(f"{len(to_send)} analysis requests to send; litellm has no price for {analyst}, so cost is not tracked")

    if to_send:
        await client.warm_up()
    writer.start()
    bar = _bar(sum(len(m) for _, m, _, _ in prepared), "analysing", "failure", run.progress)
    t0 = time.perf_counter()

    async def one(ph: str, members: list[dict], msgs: list[dict], context_note: str | None) -> None:
        try:
            answer, key, cache_row = await client.request(msgs, ANALYSIS_SCHEMA, ANALYSIS_PROMPT_VERSION, "analysis", parse_analysis)
        except (InvalidAnswer, LLMUnavailable):
            summary.unanalysed += len(members)
            bar.update(len(members))
            return
        title, summary_text, no_model_error = _outcome(answer.final_answer)
        criteria = check_criteria([c.model_dump() for c in answer.required_criteria], members[0].get("output_text"))
        summary.quotes += sum(c["evidence_verified"] is not None for c in criteria)
        summary.unverified_quotes += sum(c["evidence_verified"] is False for c in criteria)
        writer.put(Batch(
            cache=[cache_row] if cache_row else [],
            analyses=[_analysis_row(f, analyst, ANALYSIS_PROMPT_VERSION, ph, title, summary_text, json.dumps(criteria), key,
                                    no_model_error, context_note) for f in members],
        ))
        if no_model_error is None:
            for f in members:
                title_of[failure_key(f)] = title
        else:
            summary.no_model_error += len(members)
        summary.context_cut += len(members) if context_note else 0
        summary.analysed_now += len(members)
        bar.update(len(members))

    try:
        await gather_all(one(*p) for p in prepared)
    finally:
        bar.close()
        await writer.close()
        summary.analysis_seconds = time.perf_counter() - t0


async def _transcripts(run: _Run, transcripts: list[dict], client_for: Callable, agent_tax: Taxonomy) -> None:
    """The failed agent transcripts, read by the LLM analyst (transcripts.py); their categories are
    chosen at stage 1, so they add no titles to stage 3."""
    summary = run.summary
    counts = summary.transcripts
    before = counts.analysed
    bar = _bar(len(transcripts), "reading transcripts", "transcript", run.progress)
    try:
        await agent_runs.analyze_llm(run.path, run.analyst, transcripts, counts, client_for, agent_tax,
                                     context_tokens=run.settings.context_tokens, log=run.log, bar=bar.update)
    finally:
        bar.close()
        summary.analysed_now += counts.analysed - before
        summary.unanalysed += counts.unanalysed


def _outcome(fa) -> tuple[str, str, str | None]:
    """(title, summary, no_model_error) to store for a stage-1 final answer: a failure that is not
    the model's fault is titled and labelled No Model Error, its summary the analyst's reason."""
    reason = fa.no_model_error
    if reason is None:
        return fa.error_title, fa.error_summary, None
    return NO_MODEL_ERROR, fa.error_summary or f"{reason[0].upper()}{reason[1:]}.", reason


async def _stage3(run: _Run, title_of: dict, classified: dict, client_for: Callable) -> None:
    path, classifier, summary = run.path, run.classifier, run.summary
    todo = sorted(set(title_of.values()) - set(classified))
    if not todo:
        return
    with write_session(path) as con:
        cached = cached_for_prompt(con, classifier, CLASSIFY_PROMPT_VERSION)
        summaries = title_summaries(con, todo)
        cut_off = cut_off_answers(con, classifier, CLASSIFY_PROMPT_VERSION)
    writer = Writer(path)
    client = client_for(classifier, writer, cached, cut_off)
    writer.start()
    bar = _bar(len(todo), "classifying", "title", run.progress)
    try:
        result: StageResult = await classify_llm(client, writer, run.tax, todo, run.settings.batch_size,
                                                 on_done=bar.update, summaries=summaries)
    finally:
        bar.close()
        await writer.close()
    summary.titles_classified = len(result.categories)
    summary.fallbacks = result.fallbacks
    summary.unclassified = result.unavailable


def classify_titles(
    titles: list[str],
    classifier: str = OFFLINE,
    *,
    db=None,
    taxonomy_file: str | None = None,
    settings: LLMSettings = LLMSettings(),
    progress: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> tuple[dict[str, str], Summary]:
    """Title → category. The offline classifier needs no database; an LLM classifier uses the
    store for its cache, its call log and the classifications it makes. Of `settings`, the batch
    API, prices and --max-cost do not apply here."""
    started = time.perf_counter()
    tax = load_taxonomy(taxonomy_file)
    unique = list(dict.fromkeys(titles))
    if classifier == OFFLINE:
        summary = Summary(classifier=offline_name(), selected=len(unique), titles_classified=len(unique))
        cats = classify_offline(unique, tax)
        summary.seconds = time.perf_counter() - started
        return cats, summary
    path = writable_db_path(db)
    summary = Summary(classifier=classifier, selected=len(unique))
    if not path.exists():
        with write_session(path):  # the lock is keyed on the store file: create it first
            pass
    with run_lock(path):
        summary.recovered = _recover(path, log)
        cats = _classify_titles_locked(path, unique, classifier, tax, summary, settings, progress)
    summary.titles_classified = len(cats)
    summary.seconds = time.perf_counter() - started
    return cats, summary


def _classify_titles_locked(path, unique, classifier, tax, summary, settings: LLMSettings, progress) -> dict[str, str]:
    with write_session(path) as con:
        ensure_taxonomy(con, tax)
        known = classifications_of(con, tax.version, classifier)
        # titles the store has analyses for are sent with a summary, as analyze sends them
        summaries = title_summaries(con, [t for t in unique if t not in known])
    cats = {t: known[t][0] for t in unique if t in known}
    todo = [t for t in unique if t not in known]

    async def run() -> StageResult:
        writer = Writer(path)
        with write_session(path) as con:
            cached = cached_for_prompt(con, classifier, CLASSIFY_PROMPT_VERSION)
            cut_off = cut_off_answers(con, classifier, CLASSIFY_PROMPT_VERSION)
        client = LLMClient(classifier, writer, cached=cached, cut_off=cut_off, **settings.client_options())
        writer.start()
        bar = _bar(len(todo), "classifying", "title", progress)
        try:
            return await classify_llm(client, writer, tax, todo, settings.batch_size, on_done=bar.update,
                                      summaries=summaries)
        finally:
            bar.close()
            await writer.close()
            summary.stats = client.stats

    if todo:
        result = asyncio.run(run())
        cats.update(result.categories)
        summary.fallbacks = result.fallbacks
        summary.unclassified = result.unavailable
    return cats
