"""The LLM call layer: one place where requests leave the process.

- A DuckDB cache keyed by a hash of (model, prompt version, messages, schema): a re-run sends
  nothing it already has. Answers that validated are cached, and so are answers cut off at
  max_tokens (marked `finish_reason = 'length'`), which a re-run does not buy again unless asked
  (`retry_cut_off`); other invalid answers are asked again.
- Every request actually sent becomes an `llm_calls` row (tokens, cost from litellm's price map,
  latency, status), failed attempts included. A provider that sends no usage is charged the most
  the request and its answer can have cost (their UTF-8 bytes; see budget.py), never 0.
- Concurrency is an asyncio semaphore; 429/5xx/timeouts are retried with exponential backoff,
  honouring Retry-After.
- Every request carries `max_tokens`; with --max-cost it reserves its worst case first (budget.py).
- Results are handed to one `Writer` task that commits each as soon as it arrives. Each is first
  appended to the run's journal (journal.py), so an answer that cannot be committed (the store
  locked past the timeout, the process killed) is still paid for only once. When a commit or a
  journal write fails (a full disk), no further request is sent and the journal is kept.

litellm is imported lazily: importing it costs seconds and, without LITELLM_LOCAL_MODEL_COST_MAP,
tries the network.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import hashlib
import json
import math
import os
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from core.numbers import number_or_none
from store import FaultlineError, StoreError, write_session
from store.analysis import Batch, now, save_batch

from . import provider
from .budget import (
    DEFAULT_MAX_TOKENS,
    Budget,
    max_output_tokens,
    price,
    prompt_token_bound,
    usage_bound,
)
from .journal import Journal

EXPECTED_COMPLETION_TOKENS = {"analysis": 600, "classification": 1500, "discovery": 1500, "verification": 200}
MAX_RETRY_WAIT_S = 60.0
COMMIT_WINDOW_S = 0.05


class LLMError(FaultlineError):
    """The provider rejected the request (bad key, unknown model, bad request): retrying will not help."""


class LLMUnavailable(FaultlineError):
    """Retries exhausted on rate limits, server errors or timeouts."""


class InvalidAnswer(FaultlineError):
    """The model kept answering with something that is not the JSON asked for."""


class JournalFailed(StoreError):
    """The journal of paid answers could not be written (a full disk): no further request may
    be sent, as its answer could be lost."""

    def __init__(self, path: Path, exc: OSError):
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            what = f"no space left on the device holding {path.parent} (writing {path.name})"
        else:
            what = f"{path}: cannot write the journal of paid answers ({exc.strerror or exc})"
        super().__init__(what)


def cache_key(model: str, prompt_version: str, messages: list[dict], schema: dict | None) -> str:
    blob = json.dumps([model, prompt_version, messages, schema], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Stats:
    requests: int = 0
    failed_requests: int = 0
    invalid_answers: int = 0
    cache_hits: int = 0
    cut_off: int = 0
    # answers whose provider sent no token usage: charged at their byte bound
    usage_missing: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


class Writer:
    """The one task that writes: drains whatever is queued into a single short transaction.

    Everything put is journaled first; after a failed commit nothing more is queued (it stays in
    the journal) and `error` tells the clients to stop sending."""

    def __init__(self, db):
        self.db = db
        self.journal = Journal(Path(db))
        self._queue: asyncio.Queue[Batch | None] = asyncio.Queue()
        self._task: asyncio.Task | None = None
        self._closing = asyncio.Event()
        self.error: BaseException | None = None
        self.received = 0  # answers put (paid for)
        self.stored = 0  # answers committed

    def start(self) -> "Writer":
        self._task = asyncio.create_task(self._run())
        return self

    def put(self, batch: Batch) -> None:
        if not batch:
            return
        self.received += len(batch.cache)
        try:
            self.journal.append(batch)
        except OSError as exc:
            # a full disk: stop sending at once (clients check `error`); what was paid for still
            # goes to the database, which may live on another disk
            if self.error is None:
                self.error = JournalFailed(self.journal.path, exc)
        if self.error is None or isinstance(self.error, JournalFailed):
            self._queue.put_nowait(batch)

    def _save(self, batch: Batch) -> None:
        try:
            self.journal.sync()
        except OSError as exc:
            if self.error is None:
                self.error = JournalFailed(self.journal.path, exc)
        with write_session(self.db) as con:
            save_batch(con, batch)

    async def _run(self) -> None:
        done = False
        while not done:
            item = await self._queue.get()
            if item is not None and not self._closing.is_set():
                # let the rest of a burst of answers arrive: each session opens the file and runs
                # GIL-holding Python, so one commit per burst keeps the requests flowing; once
                # the caller is closing nothing more is coming, so commit at once
                try:
                    await asyncio.wait_for(self._closing.wait(), COMMIT_WINDOW_S)
                except TimeoutError:
                    pass
            merged = Batch()
            while item is not None:
                merged.extend(item)
                if self._queue.empty():
                    break
                item = self._queue.get_nowait()
            done = item is None
            if merged:
                try:
                    await asyncio.to_thread(self._save, merged)
                except BaseException as exc:  # surfaced to the caller by close()
                    self.error = exc if self.error is None else self.error
                    await asyncio.to_thread(self.journal.close)
                    return
                self.stored += len(merged.cache)
                self.journal.committed(len(merged.cache), self._queue.empty())

    async def close(self) -> None:
        self._closing.set()
        self._queue.put_nowait(None)
        if self._task is not None:
            await self._task
        if self.error is None:
            self.journal.remove()
            return
        self.journal.close()
        exc = self.error
        if not isinstance(exc, (FaultlineError, duckdb.Error)):
            raise exc
        reason = exc.message if isinstance(exc, FaultlineError) else f"{self.db}: could not store results: {exc}"
        kept = max(self.journal.pending_answers, 0)
        told = [f"{kept} answer(s) already paid for are kept in {self.journal.path} and the next run stores "
                "them before it sends anything"]
        if isinstance(exc, JournalFailed):
            told.insert(0, f"{self.stored} answer(s) already paid for were stored in the database")
        lost = self.received - self.stored - kept
        if lost > 0:
            told.append(f"{lost} answer(s) paid for could be saved nowhere and will be asked again")
        raise StoreError(f"{reason}. Stopped sending requests; {'; '.join(told)}") from None


async def gather_all(coros) -> None:
    """Run every coroutine to its end, then raise the first error: no task is left running
    (and sending requests) behind an exception."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r


_KEYLIKE = re.compile(r"\b(sk|pk|key|token)[-_][A-Za-z0-9_\-*.]{6,}", re.I)


def redact(text: str) -> str:
    """Provider error messages may quote (part of) the API key; llm_calls must never hold it."""
    for name, value in os.environ.items():
        if value and len(value) >= 8 and any(w in name.upper() for w in ("KEY", "TOKEN", "SECRET")):
            text = text.replace(value, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


def _retry_after(exc: Exception) -> float | None:
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    # seconds in ASCII digits (core.numbers: float() also takes "nan", "1e999" and "٣"), else
    # an HTTP date; a header that is neither is no wait asked for
    seconds = number_or_none(value) if isinstance(value, str) else None
    if seconds is not None:
        return max(0.0, seconds) if math.isfinite(seconds) else None
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, parsed.timestamp() - time.time()) if parsed else None


class LLMClient:
    def __init__(
        self,
        model: str,
        writer: Writer,
        *,
        api_base: str | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        max_attempts: int = 6,
        max_invalid: int = 3,
        backoff_s: float = 1.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        budget: Budget | None = None,
        cached: dict[str, str] | None = None,
        cut_off: dict[str, int | None] | None = None,
        retry_cut_off: bool = False,
    ):
        self.model = model
        self.writer = writer
        self.api_base = api_base
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.max_invalid = max_invalid
        self.backoff_s = backoff_s
        self.budget = budget or Budget(None)
        self.cached = dict(cached or {})
        # answers cut off at max_tokens in earlier runs: key → the completion tokens they took
        self.cut_off = dict(cut_off or {})
        self.retry_cut_off = retry_cut_off
        self.stats = Stats()
        # a batch.BatchSession: requests not in the cache go through the provider's batch API
        self.batch = None
        self._sem = asyncio.Semaphore(max(1, concurrency))
        self.stopped: FaultlineError | None = None
        lit = provider.litellm()
        self._lit = lit
        self.max_tokens = max_output_tokens(model, max_tokens)
        # local OpenAI-compatible servers (vLLM, llama.cpp, ...) accept a JSON schema; for hosted
        # models we trust litellm's capability map
        try:
            self.use_schema = api_base is not None or bool(lit.supports_response_schema(model=model))
        except Exception:
            self.use_schema = False
        # pricing a response costs milliseconds of CPU per call; skip it for unpriced models
        self.priced = price(model, 1, 1) is not None

    def key(self, prompt_version: str, messages: list[dict], schema: dict | None) -> str:
        return cache_key(self.model, prompt_version, messages, schema if self.use_schema else None)

    def response_format(self, schema: dict) -> dict:
        return {"type": "json_schema", "json_schema": {**schema, "strict": False}}

    def worst_case(self, messages: list[dict], schema: dict,
                   pricer: Callable[[str, int, int], float | None] = price) -> tuple[float | None, str | None]:
        """What one request may cost at most under --max-cost (None without a limit), and what that is."""
        if self.budget.limit is None:
            return None, None
        bound = prompt_token_bound(messages, schema if self.use_schema else None)
        return pricer(self.model, bound, self.max_tokens), f"{self.model}: {bound} prompt + {self.max_tokens} completion tokens at most"

    def estimate_cost(self, messages: list[dict], purpose: str) -> float | None:
        """Expected dollars for one request (not its worst case), or None when the model has no price."""
        if not self.priced:
            return None
        # about three characters per token for English prompts serialised as JSON
        return price(self.model, len(json.dumps(messages, ensure_ascii=False)) // 3, EXPECTED_COMPLETION_TOKENS[purpose])

    async def warm_up(self) -> None:
        """Run litellm's request path once on a mock response (nothing is sent), so its
        first-call imports and setup do not stall the first round of real requests."""
        await self._lit.acompletion(
            model=self.model, messages=[{"role": "user", "content": "warm-up"}], mock_response="{}",
            api_base=self.api_base, num_retries=0, max_retries=0,
        )

    async def request(
        self, messages: list[dict], schema: dict, prompt_version: str, purpose: str,
        parse: Callable[[str], Any],
    ) -> tuple[Any, str, tuple | None]:
        """The validated answer, its cache key and the cache row to commit with its results
        (None for a cache hit): the caller puts them to the writer at once (they reach the
        journal there). Invalid answers are re-requested, never cached. An answer cut off at
        max_tokens is not asked again (the same limit would cut it again): it is cached as cut
        off, and a re-run does not buy it again unless `retry_cut_off` (with a higher max_tokens)."""
        key = self.key(prompt_version, messages, schema)
        if key in self.cached:
            parsed = parse(self.cached[key])
            if parsed is not None:
                self.stats.cache_hits += 1
                return parsed, key, None
        if key in self.cut_off and not self.retry_cut_off:
            self.stats.cut_off += 1
            raise InvalidAnswer(f"{self.model}: the answer for the {purpose} was cut off at --max-tokens "
                                f"{self.max_tokens} in an earlier run (not bought again; --retry-cut-off asks again)")
        if self.batch is not None:
            got = await self.batch.request(self, key, messages, schema, prompt_version, purpose, parse)
            if got is not None:
                return got
        for _ in range(self.max_invalid):
            text, (pt, ct), cost, latency, finish = await self._send(messages, schema, purpose, key)
            parsed = parse(text)
            status = "ok" if parsed is not None else "invalid"
            call = (key, self.model, purpose, status, 200, None, pt, ct, cost, latency, now())
            if parsed is not None:
                self.cached[key] = text
                self.writer.put(Batch(calls=[call]))
                return parsed, key, (key, self.model, prompt_version, text, pt, ct)
            self.stats.invalid_answers += 1
            if finish == "length":
                self.stats.cut_off += 1
                self.cut_off[key] = ct
                self.writer.put(Batch(cache=[(key, self.model, prompt_version, text, pt, ct, "length")], calls=[call]))
                raise InvalidAnswer(f"{self.model}: the answer for the {purpose} was cut off at --max-tokens {self.max_tokens}")
            self.writer.put(Batch(calls=[call]))
        raise InvalidAnswer(f"{self.model}: {self.max_invalid} answers in a row were not valid JSON for the {purpose}")

    def _check_running(self) -> None:
        if self.stopped is not None:
            raise self.stopped
        if isinstance(self.writer.error, JournalFailed):
            raise StoreError(self.writer.error.message)
        if self.writer.error is not None:
            raise StoreError(f"{self.writer.db}: results cannot be stored; not sending more requests")

    async def _send(
        self, messages: list[dict], schema: dict, purpose: str, key: str
    ) -> tuple[str, tuple[int | None, int | None], float | None, float, str | None]:
        """One answer from the provider: (text, (prompt, completion tokens), cost, latency ms, finish reason)."""
        lit = self._lit
        kwargs: dict[str, Any] = dict(
            model=self.model, messages=messages, timeout=self.timeout, num_retries=0, max_retries=0,
            max_tokens=self.max_tokens,
        )
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.use_schema:
            kwargs["response_format"] = self.response_format(schema)
        worst, what = self.worst_case(messages, schema)
        attempt = 0
        async with self._sem:
            while True:
                attempt += 1
                self._check_running()
                held = await self.budget.reserve(worst, what)
                # a commit may have failed while this request waited for room in the budget
                try:
                    self._check_running()
                except FaultlineError:
                    self.budget.settle(held, None)
                    raise
                started = time.perf_counter()
                try:
                    resp = await lit.acompletion(**kwargs)
                except Exception as exc:
                    latency = (time.perf_counter() - started) * 1000
                    # a request that timed out or lost its connection may still have been
                    # answered and billed; an error answer was not
                    self.budget.settle(held, None, billed_unknown=isinstance(exc, (lit.Timeout, lit.APIConnectionError)))
                    status = getattr(exc, "status_code", None)
                    status = status if isinstance(status, int) else None
                    retryable = (
                        isinstance(exc, (lit.Timeout, lit.APIConnectionError, lit.RateLimitError))
                        or status in (408, 409, 429)
                        or (status is not None and status >= 500)
                    )
                    detail = redact(f"{type(exc).__name__}: {str(exc)[:300]}")
                    self.stats.requests += 1
                    self.stats.failed_requests += 1
                    self.writer.put(Batch(calls=[(key, self.model, purpose, "error", status, detail, None, None, None, latency, now())]))
                    if not retryable:
                        # every other request would be rejected the same way: stop them all
                        self.stopped = LLMError(f"{self.model}: the provider rejected the request ({detail})")
                        raise self.stopped from None
                    if attempt == self.max_attempts:
                        raise LLMUnavailable(f"{self.model}: no answer after {attempt} attempts (last: {type(exc).__name__})") from None
                    wait = _retry_after(exc)
                    if wait is None:
                        wait = self.backoff_s * 2 ** (attempt - 1) * (0.5 + random.random())
                    await asyncio.sleep(min(wait, MAX_RETRY_WAIT_S))
                    continue
                latency = (time.perf_counter() - started) * 1000
                choice = resp.choices[0]
                text = choice.message.content or ""
                finish = getattr(choice, "finish_reason", None)
                usage = getattr(resp, "usage", None)
                pt = getattr(usage, "prompt_tokens", None)
                ct = getattr(usage, "completion_tokens", None)
                if pt:
                    # litellm has already priced the response from its cost map (None when unmapped)
                    cost = (getattr(resp, "_hidden_params", None) or {}).get("response_cost") if self.priced else None
                    cost = float(cost) if cost is not None else None
                else:
                    # no usage from the provider (litellm then reports 0 tokens, which no request
                    # costs): charge the most this request and its answer can have been billed
                    self.stats.usage_missing += 1
                    pt, ct = usage_bound(messages, schema if self.use_schema else None, text, finish, self.max_tokens)
                    cost = price(self.model, pt, ct) if self.priced else None
                self.budget.settle(held, cost, billed_unknown=self.priced and cost is None,
                                   what=f"one {purpose} request to {self.model} ({pt} prompt + {ct} completion tokens)")
                self.stats.requests += 1
                self.stats.prompt_tokens += pt or 0
                self.stats.completion_tokens += ct or 0
                self.stats.cost_usd += cost or 0.0
                return text, (pt, ct), cost, latency, finish
