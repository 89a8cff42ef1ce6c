"""Requests through the provider's batch API (litellm: files + batches), at batch prices.

A `BatchSession` plugs into `LLMClient` (`client.batch = session`): `LLMClient.request` serves
the cache as always, and hands every request it would send to the session instead. The session
gathers the requests that arrive together (every stage issues all of its requests at once) into
one JSONL file per model, uploads it (`litellm.acreate_file`), creates the batch
(`litellm.acreate_batch`), polls it (`litellm.aretrieve_batch`) and reads its output and error
files (`litellm.afile_content`). So any command built on `LLMClient.request` gets `--batch`
unchanged: stage 1, stage 3 (a follow-up round of a classification is simply the next batch),
and anything else that asks for validated JSON answers. Hook for a new command: create a session,
set `client.batch`, `await session.open()` before the first request and `await session.close()`
after the last (it waits for every batch to be collected).

What holds:

- **Same cache keys as live calls**: a request's key is `client.key(...)` whichever way it goes,
  so a batch answer serves a later live run and the reverse; a re-run after collection sends nothing.
- **Never paid twice**: a submission is recorded in the store (`llm_batches`) before the batch
  is created, and marked with the provider's batch id once it is. A run that finds uncollected
  batches refuses to start unless given `--resume`, which attaches the requests to those batches
  (a batch whose creation was cut short is found again by its input file in the provider's list,
  or created from that file). A collected batch's valid answers (the cache), one `llm_calls` row
  per billed line (with its `batch_id`) and the batch's status are written in one transaction;
  until then the provider keeps the output file, which a resumed run downloads again for free.
- **`--max-cost` at submission**: each request reserves its worst case (prompt bound +
  max_tokens) at batch prices before it joins a batch (budget.py); requests that do not fit wait
  for the batch in flight to settle, and the run stops when one cannot fit at all.
- **Batch prices**: litellm's `batch_cost_calculator`: the model's `*_cost_per_token_batches`
  prices from litellm's cost map, else half its live price (the discount OpenAI, Anthropic,
  Google and Mistral give). A model with no price has no cost to track (and --max-cost refuses it).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from store import FaultlineError, write_session
from store.analysis import now
from store.batches import (
    SUBMITTING,
    forget_submission,
    mark_submitted,
    pending_batches,
    record_submission,
    save_collection,
)

from .budget import Budget, price
from .llm import InvalidAnswer, LLMError, LLMUnavailable, redact

TERMINAL = {"completed", "failed", "expired", "cancelled"}
WINDOW_S = 0.3  # requests arriving this close together share a batch
MAX_LINES = 50_000  # OpenAI's limit per batch
MAX_BYTES = 190 * 2**20  # OpenAI's is 200 MB per input file
API_ATTEMPTS = 4
POLL_FAILURES = 10
ENDPOINT = "/v1/chat/completions"


# providers whose files and batches litellm serves from an OpenAI-format JSONL file
PROVIDERS = ("openai", "azure", "hosted_vllm", "litellm_proxy")


class BatchesPending(FaultlineError):
    """Batches submitted by an earlier run are not collected yet."""


class BatchUnsupported(FaultlineError):
    """The model's provider has no batch API that litellm serves."""


def check_provider(model: str) -> None:
    try:
        provider = _lit().get_llm_provider(model)[1]
    except Exception as exc:
        raise BatchUnsupported(f"{model}: litellm does not know this model's provider ({exc})") from None
    if provider not in PROVIDERS:
        raise BatchUnsupported(
            f"{model}: --batch needs a provider whose batch API litellm serves ({', '.join(PROVIDERS)}); "
            f"{provider} is not one of them: run without --batch"
        )


def batch_price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for these tokens in a batch, or None when litellm has no price for the model."""
    if price(model, 1, 1) is None:
        return None
    from litellm import Usage
    from litellm.cost_calculator import batch_cost_calculator

    usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  total_tokens=prompt_tokens + completion_tokens)
    cin, cout = batch_cost_calculator(usage, model)
    return float(cin) + float(cout)


@dataclass
class _Result:
    status: str  # ok | invalid | error
    text: str = ""
    parsed: Any = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    finish: str | None = None
    error: str | None = None


@dataclass
class _Line:
    key: str
    model: str
    prompt_version: str
    purpose: str
    body: dict
    parse: Callable[[str], Any]
    held: float
    future: asyncio.Future
    stats: Any  # the client's Stats: what this run sent and paid


@dataclass
class _Submission:
    submission_id: str
    model: str
    provider: str
    api_base: str | None
    lines: dict[str, _Line]  # by cache key (the custom_id)
    meta: dict[str, dict] = field(default_factory=dict)  # key -> {prompt_version, purpose} of every line
    batch_id: str | None = None
    input_file_id: str | None = None


def _lit():
    from . import provider

    return provider.litellm()


async def _api(what: str, call, *args, **kwargs):
    """A files/batches API call, retried on rate limits, server errors and lost connections."""
    lit = _lit()
    for attempt in range(1, API_ATTEMPTS + 1):
        try:
            return await call(*args, **kwargs)
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            retryable = isinstance(exc, (lit.Timeout, lit.APIConnectionError, lit.RateLimitError)) or (
                isinstance(status, int) and (status >= 500 or status in (408, 409, 429)))
            detail = redact(f"{type(exc).__name__}: {str(exc)[:300]}")
            if not retryable:
                raise LLMError(f"the batch API refused to {what} ({detail})") from None
            if attempt == API_ATTEMPTS:
                raise LLMUnavailable(f"could not {what} after {attempt} attempts ({detail})") from None
            await asyncio.sleep(min(2 ** attempt, 30))


class BatchSession:
    """One per run: `submit` (--batch) sends new requests in batches; `resume` (--resume)
    attaches to the batches an earlier run submitted and collects them."""

    def __init__(self, db: Path, budget: Budget, *, submit: bool, resume: bool, poll_s: float = 30.0,
                 parsers: dict[str, Callable[[str], Any]] | None = None, log: Callable[[str], None] = lambda m: None):
        self.db = db
        self.budget = budget
        self.submit = submit
        self.resume = resume
        self.poll_s = poll_s
        self.parsers = dict(parsers or {})
        self.log = log
        self.futures: dict[str, asyncio.Future] = {}  # key -> the answer of a line in flight
        self.answers: dict[str, _Result] = {}  # valid answers collected by this session
        self._queues: dict[tuple, list[_Line]] = {}
        self._flush: dict[tuple, asyncio.Task] = {}
        self._tasks: list[asyncio.Task] = []
        self.submitted = self.collected = self.lines_billed = 0
        self.cost = 0.0

    # ---------------------------------------------------------------- start and end

    async def open(self) -> None:
        with write_session(self.db) as con:
            pending = pending_batches(con)
        if pending and not self.resume:
            listed = ", ".join(f"{p['batch_id'] or p['input_file_id']} ({p['n_requests']} requests to {p['model']})"
                               for p in pending)
            raise BatchesPending(
                f"{self.db}: {len(pending)} batch(es) submitted by an earlier run are not collected yet: {listed}; "
                "run the command again with --resume to collect them (their requests are paid for once, there)"
            )
        for p in pending:
            sub = _Submission(p["submission_id"], p["model"], p["provider"], p["api_base"], {},
                              {r["key"]: r for r in p["requests"]}, p["batch_id"], p["input_file_id"])
            for key in sub.meta:
                self.futures.setdefault(key, asyncio.get_running_loop().create_future())
            self._tasks.append(asyncio.create_task(self._follow(sub, adopting=p["status"] == SUBMITTING)))
        if pending:
            self.log(f"collecting {len(pending)} batch(es) submitted earlier "
                     f"({sum(p['n_requests'] for p in pending)} requests)")

    async def close(self) -> None:
        """Submit what is queued, then wait until every batch is collected."""
        for task in list(self._flush.values()):
            await task
        while self._tasks:
            tasks, self._tasks = self._tasks, []
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException):
                    raise r

    def abandon(self) -> None:
        """Stop waiting (the run failed): submitted batches stay recorded for --resume."""
        for task in [*self._flush.values(), *self._tasks]:
            task.cancel()

    def line(self) -> str:
        if not (self.submitted or self.collected):
            return ""
        return (f"batches: {self.submitted} submitted, {self.collected} collected "
                f"({self.lines_billed} lines billed, ${self.cost:.4f} at batch prices)")

    # ---------------------------------------------------------------- requests

    async def request(self, client, key: str, messages: list[dict], schema: dict, prompt_version: str,
                      purpose: str, parse: Callable[[str], Any]):
        """(parsed answer, key, None) from a batch, or None when this request is to go live
        (--resume without --batch, and no earlier batch holds it)."""
        for _ in range(client.max_invalid):
            got, ours = self.answers.get(key), False
            if got is None:
                if key in self.futures:
                    got = await asyncio.shield(self.futures[key])
                elif not self.submit:
                    return None
                else:
                    got, ours = await self._enqueue(client, key, messages, schema, prompt_version, purpose, parse), True
            if got.status == "ok" and got.parsed is None:
                got.parsed = parse(got.text)  # collected for an earlier run's request
                if got.parsed is None:
                    got = _Result("invalid", got.text, finish=got.finish)
            if got.status == "ok":
                client.cached[key] = got.text
                return got.parsed, key, None
            if got.status == "error":
                if not ours:  # an earlier run's batch that expired or failed: ask anew
                    if not self.submit:
                        return None
                    continue
                raise LLMUnavailable(f"{client.model}: the batch did not answer the {purpose} request ({got.error})")
            client.stats.invalid_answers += 1
            if got.finish == "length":
                client.stats.cut_off += 1
                client.cut_off[key] = got.completion_tokens
                raise InvalidAnswer(f"{client.model}: the answer for the {purpose} was cut off at --max-tokens {client.max_tokens}")
            if not self.submit:
                return None  # an earlier batch's invalid answer: ask again live
        raise InvalidAnswer(f"{client.model}: {client.max_invalid} answers in a row were not valid JSON for the {purpose}")

    async def _enqueue(self, client, key, messages, schema, prompt_version, purpose, parse) -> _Result:
        lit = client._lit
        model_name, provider, _, _ = lit.get_llm_provider(client.model)
        body: dict[str, Any] = {"model": model_name, "messages": messages}
        body["max_completion_tokens" if provider in ("openai", "azure") else "max_tokens"] = client.max_tokens
        if client.use_schema:
            body["response_format"] = client.response_format(schema)
        worst, what = client.worst_case(messages, schema, batch_price)
        held = await self.budget.reserve(worst, what and f"{what}, in a batch")
        future = asyncio.get_running_loop().create_future()
        self.futures[key] = future
        qkey = (client.model, provider, client.api_base)
        queue = self._queues.setdefault(qkey, [])
        queue.append(_Line(key, client.model, prompt_version, purpose, body, parse, held, future, client.stats))
        client.stats.requests += 1
        if qkey not in self._flush:
            self._start_flush(qkey)
        try:
            return await asyncio.shield(future)
        finally:
            if self.futures.get(key) is future:
                del self.futures[key]

    def _start_flush(self, qkey: tuple) -> None:
        async def flush() -> None:
            await asyncio.sleep(WINDOW_S)
            self._flush.pop(qkey, None)
            lines = self._queues.pop(qkey, [])
            model, provider, api_base = qkey
            chunk: list[_Line] = []
            size = 0
            for line in lines:
                text = self._jsonl(line)
                if chunk and (len(chunk) >= MAX_LINES or size + len(text) > MAX_BYTES):
                    self._tasks.append(asyncio.create_task(self._submit(model, provider, api_base, chunk)))
                    chunk, size = [], 0
                chunk.append(line)
                size += len(text)
            if chunk:
                self._tasks.append(asyncio.create_task(self._submit(model, provider, api_base, chunk)))

        self._flush[qkey] = asyncio.create_task(flush())

    @staticmethod
    def _jsonl(line: _Line) -> str:
        return json.dumps({"custom_id": line.key, "method": "POST", "url": ENDPOINT, "body": line.body},
                          ensure_ascii=False) + "\n"

    # ---------------------------------------------------------------- submission

    async def _submit(self, model: str, provider: str, api_base: str | None, lines: list[_Line]) -> None:
        sub = _Submission(uuid.uuid4().hex, model, provider, api_base, {ln.key: ln for ln in lines},
                          {ln.key: {"key": ln.key, "prompt_version": ln.prompt_version, "purpose": ln.purpose,
                                    "reserved_usd": ln.held} for ln in lines})
        lit = _lit()
        data = "".join(self._jsonl(ln) for ln in lines).encode("utf-8")
        try:
            uploaded = await _api("upload a batch file", lit.acreate_file, file=("faultline-batch.jsonl", data, "application/jsonl"),
                                  purpose="batch", custom_llm_provider=provider, api_base=api_base)
            sub.input_file_id = uploaded.id
            with write_session(self.db) as con:
                record_submission(con, sub.submission_id, sub.input_file_id, model, provider, api_base,
                                  list(sub.meta.values()), sum(ln.held for ln in lines) or None)
            await self._create(sub)
        except LLMUnavailable as exc:
            # the batch may have been created without the answer reaching us: its submission
            # stays recorded, and --resume finds it by its input file
            self._fail(sub, exc.message, billed_unknown=sub.input_file_id is not None)
            raise
        except FaultlineError as exc:
            self._fail(sub, exc.message)
            raise
        self.submitted += 1
        self.log(f"submitted batch {sub.batch_id}: {len(lines)} {lines[0].purpose} request(s) to {model}")
        await self._follow(sub)

    async def _create(self, sub: _Submission) -> None:
        lit = _lit()
        try:
            batch = await _api("create a batch", lit.acreate_batch, completion_window="24h", endpoint=ENDPOINT,
                               input_file_id=sub.input_file_id, custom_llm_provider=sub.provider,
                               api_base=sub.api_base, metadata={"faultline_submission": sub.submission_id})
        except LLMError:
            # refused outright: no batch exists, so nothing is pending
            with write_session(self.db) as con:
                forget_submission(con, sub.submission_id)
            raise
        sub.batch_id = batch.id
        with write_session(self.db) as con:
            mark_submitted(con, sub.submission_id, batch.id)

    async def _adopt(self, sub: _Submission) -> None:
        """A submission whose batch creation an earlier run may not have seen through: the
        provider's batch for its input file if there is one, else create it now."""
        lit = _lit()
        listed = await _api("list batches", lit.alist_batches, custom_llm_provider=sub.provider,
                            api_base=sub.api_base, limit=100)
        found = next((b for b in getattr(listed, "data", []) or [] if b.input_file_id == sub.input_file_id), None)
        if found is None:
            await self._create(sub)
            return
        sub.batch_id = found.id
        with write_session(self.db) as con:
            mark_submitted(con, sub.submission_id, found.id)

    # ---------------------------------------------------------------- collection

    async def _follow(self, sub: _Submission, adopting: bool = False) -> None:
        """Poll a submitted batch until it ends, then collect it."""
        lit = _lit()
        try:
            if adopting or sub.batch_id is None:
                await self._adopt(sub)
            failures, last = 0, None
            while True:
                try:
                    batch = await lit.aretrieve_batch(batch_id=sub.batch_id, custom_llm_provider=sub.provider,
                                                      api_base=sub.api_base)
                    failures = 0
                except Exception as exc:
                    failures += 1
                    if failures >= POLL_FAILURES:
                        raise LLMUnavailable(
                            f"batch {sub.batch_id}: no status after {failures} tries "
                            f"({redact(type(exc).__name__ + ': ' + str(exc)[:200])}); it stays recorded: collect it with --resume"
                        ) from None
                    await asyncio.sleep(self.poll_s)
                    continue
                counts = getattr(batch, "request_counts", None)
                progress = (batch.status, getattr(counts, "completed", None), getattr(counts, "total", None))
                if progress != last:
                    last = progress
                    self.log(f"batch {sub.batch_id}: {batch.status}"
                             + (f", {progress[1]}/{progress[2]} done" if progress[2] else ""))
                if batch.status in TERMINAL:
                    await self._collect(sub, batch)
                    return
                await asyncio.sleep(self.poll_s)
        except FaultlineError as exc:
            self._fail(sub, exc.message, billed_unknown=True)
            raise

    async def _content(self, sub: _Submission, file_id: str | None) -> list[dict]:
        if not file_id:
            return []
        lit = _lit()
        got = await _api("download batch results", lit.afile_content, file_id=file_id,
                         custom_llm_provider=sub.provider, api_base=sub.api_base)
        out = []
        for line in got.content.decode("utf-8").splitlines():
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue  # a line we cannot read is a request without an answer
        return out

    def _parse_line(self, sub: _Submission, item: dict) -> tuple[str, _Result] | None:
        key = item.get("custom_id")
        if key not in sub.meta:
            return None
        line = sub.lines.get(key)
        parse = line.parse if line is not None else self.parsers.get(sub.meta[key]["prompt_version"])
        response = item.get("response") or {}
        body = response.get("body") or {}
        code = response.get("status_code")
        if code != 200 or item.get("error"):
            err = item.get("error") or body.get("error") or {}
            message = err.get("message") if isinstance(err, dict) else str(err)
            return key, _Result("error", error=redact(f"HTTP {code}: {message}"[:300]))
        usage = body.get("usage") or {}
        pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            return key, _Result("invalid", "", prompt_tokens=pt, completion_tokens=ct,
                                cost=batch_price(sub.model, pt or 0, ct or 0))
        parsed = parse(text) if parse is not None else None
        # an answer of an earlier run whose prompt this command does not know stays uncached
        status = "ok" if parsed is not None else "invalid"
        return key, _Result(status, text, parsed, pt, ct, batch_price(sub.model, pt or 0, ct or 0),
                            choice.get("finish_reason"))

    async def _collect(self, sub: _Submission, batch) -> None:
        results: dict[str, _Result] = {}
        for item in [*await self._content(sub, batch.output_file_id),
                     *await self._content(sub, getattr(batch, "error_file_id", None))]:
            parsed = self._parse_line(sub, item)
            if parsed is not None:
                results.setdefault(*parsed)
        for key in sub.meta:
            results.setdefault(key, _Result("error", error=f"no answer in the batch (status {batch.status})"))
        cache, calls, cost, billed = [], [], 0.0, 0
        stamp = now()
        for key, r in results.items():
            meta = sub.meta[key]
            if r.status == "ok":
                cache.append((key, sub.model, meta["prompt_version"], r.text, r.prompt_tokens, r.completion_tokens))
            elif r.status == "invalid" and r.finish == "length":
                # paid for but cut off at max_tokens: kept as such, not bought again (as live answers)
                cache.append((key, sub.model, meta["prompt_version"], r.text, r.prompt_tokens, r.completion_tokens,
                              "length"))
            if r.status != "error" or r.prompt_tokens is not None:
                billed += 1
            cost += r.cost or 0.0
            http = 200 if r.status != "error" else None
            calls.append((key, sub.model, meta["purpose"], r.status, http, r.error, r.prompt_tokens,
                          r.completion_tokens, r.cost, None, stamp))
        with write_session(self.db) as con:
            fresh = save_collection(con, sub.submission_id, sub.batch_id, batch.status, cache, calls, cost)
        self.collected += 1
        if fresh:
            self.lines_billed += billed
            self.cost += cost
        self.log(f"collected batch {sub.batch_id} ({batch.status}): {sum(r.status == 'ok' for r in results.values())} "
                 f"valid answer(s) of {len(results)}, ${cost:.4f} at batch prices")
        for key, r in results.items():
            line = sub.lines.get(key)
            self.budget.settle(line.held if line else 0.0, r.cost if fresh else None,
                               what=f"one batch request to {sub.model} ({r.prompt_tokens} prompt + {r.completion_tokens} completion tokens)")
            if r.status == "ok":
                self.answers[key] = r
            if line is not None and fresh:
                line.stats.prompt_tokens += r.prompt_tokens or 0
                line.stats.completion_tokens += r.completion_tokens or 0
                line.stats.cost_usd += r.cost or 0.0
            future = self.futures.pop(key, None) if line is None else line.future
            if future is not None and not future.done():
                future.set_result(r)
            if line is not None and self.futures.get(key) is future:
                del self.futures[key]

    def _fail(self, sub: _Submission, why: str, billed_unknown: bool = False) -> None:
        """The lines of a batch that could not be submitted or followed get no answer here;
        `billed_unknown`: the batch may run and be billed all the same."""
        for key in sub.meta:
            line = sub.lines.get(key)
            if line is not None:
                self.budget.settle(line.held, None, billed_unknown=billed_unknown)
            future = line.future if line is not None else self.futures.pop(key, None)
            if future is not None and not future.done():
                future.set_result(_Result("error", error=why))
