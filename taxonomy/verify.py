"""`verify`: a second LLM judges whether each analysis correctly explains its failure (the
ErrorMap paper's meta-judge validation, which accepted 89-94% of its analyses).

The verifier sees what the analyst saw (the same fields, under the same context budget) and the
analysis under review: its title, summary and category with the criteria and evidence it gave
(each quote marked verified or not found), or its finding that the failure is not the model's
fault. It answers `{accepted, reason}`; the verdicts are stored in `verifications`, naming the
analysis they judged, and the acceptance rate is reported with a 95% Wilson interval over the
verified sample.

The same machinery as `analyze`: the run lock, the journal recovered first, the cache (a re-run
sends nothing), `--max-cost` reserved per request, identical prompts sent once, and `--batch` /
`--resume` through the provider's batch API (taxonomy/batch.py).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from pydantic import BaseModel, ValidationError

from store import StoreError, writable_db_path, write_session
from store.analysis import (
    Batch,
    cached_responses,
    correct_outputs,
    cut_off_answers,
    failures,
    latest_analyses,
    models_and_datasets,
    verdicts_of,
)
from store.batches import pending_batches
from store.first_errors import transcript_lengths

from .batch import BatchSession, check_provider
from .budget import Budget, BudgetExhausted, register_prices, require_prices
from .catalog import TaxonomyError
from .context import context_budget
from .llm import InvalidAnswer, LLMClient, LLMUnavailable, Stats, Writer, gather_all
from .prompts import _json_text, analysis_fields, failure_messages
from .quotes import verified
from .runlock import run_lock
from .select import SAMPLE_SEED, check_names, choose_analyst, failure_key
from .settings import LLMSettings

VERIFY_PROMPT_VERSION = "verify-v1"


class Verdict(BaseModel):
    accepted: bool
    reason: str = ""


VERIFY_SCHEMA = {
    "name": "analysis_verification",
    "schema": {
        "type": "object",
        "properties": {"accepted": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["accepted", "reason"],
        "additionalProperties": False,
    },
}

VERIFY_SYSTEM = """You are a meta-judge checking another analyst's explanation of why a language model's output was scored as a failure on a benchmark item.

You get what the analyst got (the task's instructions, the prompt, the input, the references,
correct outputs of other models, what the benchmark's own judges said, how the output was scored,
the failed output) and the analysis under review: the first major error it found (title, summary,
category) with the criteria and evidence it gave, or its finding that the failure is not the
model's fault.

Accept the analysis when it correctly explains the failure: the error it names is really in the
failed output, it is the first major error (the one that set the answer on the wrong path), and
the summary describes it faithfully; or, for a finding that the failure is not the model's fault,
when the failed output is indeed acceptable or the reference is indeed wrong or ambiguous.
Reject it when the error is not in the output, is a later or minor one, misreads the output or the
task, or when the failure is (or is not) the model's fault contrary to the analysis. Evidence
marked NOT FOUND does not occur in the output.

Answer with one JSON object only: {"accepted": true or false, "reason": "<one or two sentences>"}."""


def parse_verdict(text: str) -> Verdict | None:
    try:
        return Verdict.model_validate_json(_json_text(text))
    except ValidationError:
        return None


def render_analysis(analysis: dict, output: str | None) -> str:
    """The analysis under review, as the verifier reads it."""
    if analysis.get("no_model_error"):
        lines = [f"finding: not a model error ({analysis['no_model_error']})", f"why: {analysis.get('error_summary') or ''}"]
    else:
        lines = [f"error title: {analysis.get('error_title')}", f"summary: {analysis.get('error_summary')}"]
        if analysis.get("category"):
            lines.append(f"category: {analysis['category']}")
    criteria = [c for c in analysis.get("required_criteria") or [] if isinstance(c, dict)]
    if criteria:
        lines.append("criteria:")
    for c in criteria:
        head = f"- {c.get('criterion')} (present: {c.get('present_in_wrong')}, quality: {c.get('quality')})"
        quote = c.get("evidence")
        found = verified(output, quote)
        if found is not None:
            head += f'; evidence "{quote}" ' + ("[verified in the output]" if found else "[NOT FOUND in the output]")
        if c.get("comment"):
            head += f"; {c['comment']}"
        lines.append(head)
    return "\n".join(lines)


def verify_messages(rec: dict, analysis: dict, correct: list[tuple[str, str]], budget=None) -> tuple[list[dict], str | None]:
    fields = {**analysis_fields(rec, correct), "analysis": render_analysis(analysis, rec.get("output_text"))}
    return failure_messages(VERIFY_SYSTEM, fields, rec, "Does the analysis correctly explain this failure?", budget)


@dataclass
class VerifySummary:
    analyst: str = ""
    verifier: str = ""
    selected: int = 0
    previously_verified: int = 0
    verified_now: int = 0
    accepted: int = 0
    unverified: int = 0  # no valid answer (re-run to retry)
    context_cut: int = 0
    recovered: int = 0
    estimated_cost: float | None = None
    budget: Budget | None = None
    stats: Stats = field(default_factory=Stats)
    stopped: str | None = None
    batches: str = ""  # what went through the batch API (--batch / --resume)
    seconds: float = 0.0
    transcripts: int = 0  # analyses of agent transcripts, left out: the verifier reads answers, not transcripts

    @property
    def n(self) -> int:
        return self.previously_verified + self.verified_now

    @property
    def rate(self) -> float | None:
        return self.accepted / self.n if self.n else None

    @property
    def ci(self) -> tuple[float, float] | None:
        from core.significance import wilson

        return wilson(self.accepted, self.n) if self.n else None

    def as_json(self) -> dict:
        lo, hi = self.ci or (None, None)
        return {"analyst": self.analyst, "verifier": self.verifier, "n": self.n, "accepted": self.accepted,
                "rate": self.rate, "ci_low": lo, "ci_high": hi, "selected": self.selected,
                "not_verified": self.selected - self.n}

    def line(self) -> str:
        from .analyze import calls_text

        s = self.stats
        if self.n:
            lo, hi = self.ci
            head = (f"{self.verifier} accepted {self.accepted}/{self.n} analyses of {self.analyst} ({self.rate:.1%}, "
                    f"95% Wilson CI {lo:.1%} to {hi:.1%})")
        else:
            head = f"no analysis of {self.analyst} verified by {self.verifier}"
        return (
            head + f"; {self.verified_now} verified now, {self.previously_verified} earlier"
            + (f", {self.unverified} without a valid answer" if self.unverified else "")
            + (f"; {self.context_cut} prompts cut to fit the verifier's context" if self.context_cut else "")
            + (f"; {self.transcripts} analyses of agent transcripts left out (verify-v1 reads answers, not "
               "transcripts)" if self.transcripts else "")
            + f"; {calls_text(s, self.recovered)}; cost ${s.cost_usd:.4f}; "
            + (f"{self.batches}; " if self.batches else "")
            + f"{self.seconds:.1f} s"
        )


def _rank(f: dict) -> str:
    """A failure's place in the sample order: fixed per failure, so the sample of N keeps its
    members as the store grows."""
    return hashlib.sha256(f"{SAMPLE_SEED}:{f['run_id']}:{f['instance_id']}:{f['train_trial_index']}".encode()).hexdigest()


def verify(
    db=None,
    verifier: str = "",
    *,
    analyst: str | None = None,
    sample: int | None = None,
    models: Sequence[str] = (),
    datasets: Sequence[str] = (),
    settings: LLMSettings = LLMSettings(),
    progress: bool = False,
    log: Callable[[str], None] = lambda msg: None,
) -> VerifySummary:
    """Verify the current analyses of `analyst` (default: the analyst with the most labels), all
    or a fixed sample of `sample` of them; `settings` as for `analyze` (its batch_size does not
    apply here)."""
    from .analyze import _recover

    started = time.perf_counter()
    if not verifier or verifier == "offline":
        raise TaxonomyError("--verifier must be a litellm model (the offline analyst cannot judge analyses)")
    if sample is not None and sample < 1:
        raise TaxonomyError(f"--sample must be at least 1, got {sample}")
    if settings.batch:
        check_provider(verifier)
    path = writable_db_path(db)
    if not path.exists():
        raise StoreError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    register_prices(dict(settings.prices or {}))
    require_prices([verifier], settings.max_cost)
    summary = VerifySummary(verifier=verifier, budget=Budget(settings.max_cost))
    with run_lock(path):
        summary.recovered = _recover(path, log)
        with write_session(path) as con:
            known_models, known_datasets = models_and_datasets(con)
            check_names("model", models, known_models)
            check_names("dataset", datasets, known_datasets)
            summary.analyst = analyst = choose_analyst(con, analyst, TaxonomyError)
            analyses = latest_analyses(con, analyst)
            chosen = [(f, analyses[failure_key(f)]) for f in failures(con, models, datasets) if failure_key(f) in analyses]
            # an agent transcript's analysis names a step the verify-v1 prompt does not show
            with_steps = transcript_lengths(con, sorted({f["run_id"] for f, _ in chosen}))
            summary.transcripts = sum(1 for f, _ in chosen if failure_key(f) in with_steps)
            chosen = [(f, a) for f, a in chosen if failure_key(f) not in with_steps]
            if sample is not None:
                chosen = sorted(chosen, key=lambda fa: _rank(fa[0]))[:sample]
            done = verdicts_of(con, analyst, verifier, VERIFY_PROMPT_VERSION)
            correct = correct_outputs(con, sorted({f["dataset"] for f, _ in chosen}))
            has_pending = bool(pending_batches(con))
        summary.selected = len(chosen)
        pending = []
        for f, a in chosen:
            verdict = done.get((*failure_key(f), a["analysed_at"]))
            if verdict is None:
                pending.append((f, a))
            else:
                summary.previously_verified += 1
                summary.accepted += verdict[0]
        if pending or (settings.resume and has_pending):
            session = None
            if settings.batch or settings.resume or has_pending:
                # without --resume a store with uncollected batches is refused (open() says so)
                session = BatchSession(path, summary.budget, submit=settings.batch, resume=settings.resume,
                                       poll_s=settings.poll_interval, log=log,
                                       parsers={VERIFY_PROMPT_VERSION: parse_verdict})
            try:
                asyncio.run(_verify_all(path, summary, pending, correct, session, settings, progress=progress, log=log))
            except BudgetExhausted:
                pass
            if summary.budget.stopped is not None:
                summary.stopped = summary.budget.message()
    summary.seconds = time.perf_counter() - started
    return summary


async def _verify_all(path, summary: VerifySummary, pending: list[tuple[dict, dict]], correct: dict,
                      session: BatchSession | None, settings: LLMSettings, *, progress: bool,
                      log: Callable[[str], None]) -> None:
    """Verify `pending` (failure, analysis) pairs of `summary.analyst` with `summary.verifier`."""
    from .analyze import _bar

    verifier, analyst = summary.verifier, summary.analyst
    writer = Writer(path)
    client = LLMClient(verifier, writer, budget=summary.budget, **settings.client_options())
    client.batch = session
    budget = context_budget(verifier, client.max_tokens, settings.context_tokens)
    # identical prompts (the same failure text, analysed alike) are sent once
    groups: dict[str, tuple[list[dict], list[tuple[dict, dict]]]] = {}
    for f, a in pending:
        others = [c for c in correct.get((f["dataset"], f["instance_id"]), []) if c[0] != f["model"]]
        msgs, note = verify_messages(f, a, others, budget)
        summary.context_cut += bool(note)
        key = client.key(VERIFY_PROMPT_VERSION, msgs, VERIFY_SCHEMA)
        groups.setdefault(key, (msgs, []))[1].append((f, a))
    with write_session(path) as con:
        client.cached.update(cached_responses(con, list(groups)))
        # answers an earlier run got cut off at max_tokens are not bought again (--retry-cut-off)
        client.cut_off.update(cut_off_answers(con, verifier, VERIFY_PROMPT_VERSION))
    skipped = set() if settings.retry_cut_off else set(client.cut_off)
    to_send = [msgs for key, (msgs, _) in groups.items() if key not in client.cached and key not in skipped]
    estimates = [client.estimate_cost(m, "verification") for m in to_send]
    if to_send and all(e is not None for e in estimates):
        summary.estimated_cost = sum(estimates)
        log(f"{len(to_send)} verification requests to send, estimated cost ${summary.estimated_cost:.4f}"
            + (f"; each request reserves its worst case at --max-tokens {client.max_tokens} from --max-cost "
               f"${settings.max_cost:.4f}" if settings.max_cost is not None else ""))
    elif to_send:
        log(f"{len(to_send)} verification requests to send; litellm has no price for {verifier}, so cost is not tracked")
    if to_send:
        await client.warm_up()
    writer.start()
    bar = _bar(len(pending), "verifying", "analysis", progress)

    async def one(msgs: list[dict], members: list[tuple[dict, dict]]) -> None:
        try:
            answer, key, cache_row = await client.request(msgs, VERIFY_SCHEMA, VERIFY_PROMPT_VERSION, "verification", parse_verdict)
        except (InvalidAnswer, LLMUnavailable):
            summary.unverified += len(members)
            bar.update(len(members))
            return
        writer.put(Batch(
            cache=[cache_row] if cache_row else [],
            verifications=[(*failure_key(f), analyst, a["analysed_at"], verifier, VERIFY_PROMPT_VERSION, answer.accepted,
                            answer.reason.strip() or None, key) for f, a in members],
        ))
        summary.verified_now += len(members)
        summary.accepted += answer.accepted * len(members)
        bar.update(len(members))

    try:
        if session is not None:
            await session.open()
        await gather_all(one(msgs, members) for msgs, members in groups.values())
        if session is not None:
            # every batch submitted is collected before the run ends (it is paid for)
            await session.close()
            summary.batches = session.line()
    except BaseException:
        if session is not None:
            session.abandon()  # what was submitted stays recorded for --resume
        raise
    finally:
        bar.close()
        await writer.close()
        summary.stats = client.stats
