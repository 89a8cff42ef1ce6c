"""`--max-cost` as a ceiling on what is actually spent.

Every request reserves its worst case before it leaves: the model's price for an upper bound of
its prompt tokens plus `max_tokens`, the most the provider may bill for its answer. A request is
sent only when what is spent, what requests in flight have reserved and its own worst case fit
under the limit; when they do not fit only because of requests in flight, it waits for those to
settle (they usually cost far less than their worst case). The run stops at the first request
whose worst case would not fit even with nothing in flight, and the message reports the spend.

A prompt never has more tokens than UTF-8 bytes: byte-level BPE and SentencePiece with byte
fallback spend at least one byte per token. The bound is taken over the JSON of the messages and
of the response schema (providers count the schema as prompt), plus a margin for the chat template
and the system prompt some providers add for structured output.

A provider that sends no token usage with an answer (some local servers and proxies) is charged
that same bound for the prompt and the answer's UTF-8 bytes for the completion (`usage_bound`):
never 0, and never less than it can have billed for the text it returned. A tokenizer count
(litellm's token_counter falls back to tiktoken for most models) could undercount another
model's tokenizer and let a run pass --max-cost.

Prices come from litellm's cost map, or from the user (`--price MODEL IN OUT`) for a model the map
does not know; without a price there is no ceiling to enforce, so --max-cost is refused.
"""

from __future__ import annotations

import asyncio
import json
import logging

from store import FaultlineError

from . import provider

DEFAULT_MAX_TOKENS = 4096
PROMPT_MARGIN_TOKENS = 512


class BudgetExhausted(FaultlineError):
    """The next request could take the run past --max-cost, or the provider billed past a reservation."""

    exit_code = 3


class PriceUnknown(FaultlineError):
    """--max-cost was asked for a model without a price."""


def register_prices(prices: dict[str, tuple[float, float]]) -> None:
    """User prices in USD per million input / output tokens, handed to litellm's cost map so that
    litellm prices every response of these models."""
    if not prices:
        return
    lit = provider.litellm()
    entries = {
        model: {"input_cost_per_token": p_in / 1e6, "output_cost_per_token": p_out / 1e6,
                "litellm_provider": model.split("/", 1)[0] if "/" in model else "openai", "mode": "chat"}
        for model, (p_in, p_out) in prices.items()
    }
    # litellm warns that cache-read prices default to 0 for a model it did not know: they do here
    logger = logging.getLogger("LiteLLM")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        lit.register_model(entries)
    finally:
        logger.setLevel(level)


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """Dollars for these tokens, or None when litellm has no price for the model."""
    try:
        cin, cout = provider.litellm().cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    except Exception:
        return None
    return float(cin) + float(cout)


def require_prices(models: list[str], max_cost: float | None) -> None:
    if max_cost is None:
        return
    unpriced = [m for m in models if price(m, 1, 1) is None]
    if unpriced:
        raise PriceUnknown(
            f"--max-cost needs a price for {', '.join(unpriced)}: litellm's price map has none, so the "
            f"spend could not be bounded; give one with --price {unpriced[0]} IN OUT "
            "(USD per million input and output tokens), or run without --max-cost"
        )


def max_output_tokens(model: str, requested: int) -> int:
    """`requested`, lowered to the model's own output limit when litellm knows it (a larger
    max_tokens is an error at most providers)."""
    try:
        limit = provider.litellm().get_model_info(model).get("max_output_tokens")
    except Exception:
        return requested
    return min(requested, int(limit)) if limit else requested


def prompt_token_bound(messages: list[dict], schema: dict | None) -> int:
    blob = json.dumps(messages, ensure_ascii=False) + (json.dumps(schema, ensure_ascii=False) if schema else "")
    return len(blob.encode("utf-8")) + PROMPT_MARGIN_TOKENS


def usage_bound(messages: list[dict], schema: dict | None, answer: str, finish: str | None,
                max_tokens: int) -> tuple[int, int]:
    """(prompt, completion) tokens to charge for an answer whose provider reported no usage: the
    prompt's byte bound, and the answer's UTF-8 bytes (at least 1; all of max_tokens when it was
    cut off there), never more than max_tokens. An upper bound of what the provider can bill for
    the text it returned, so --max-cost holds."""
    completion = max_tokens if finish == "length" else min(max(len(answer.encode("utf-8")), 1), max_tokens)
    return prompt_token_bound(messages, schema), completion


class Budget:
    """One per run, shared by the analyst and the classifier: the limit holds for their sum."""

    def __init__(self, limit: float | None):
        self.limit = limit
        self.spent = 0.0
        # worst case of requests whose bill is unknown (timed out or cut off after sending: the
        # provider may still have answered and billed them)
        self.at_risk = 0.0
        self.at_risk_requests = 0
        self.reserved = 0.0
        self.stopped: BudgetExhausted | None = None
        self._why: tuple[str, dict] | None = None
        self._changed = asyncio.Condition() if limit is not None else None

    def _stop(self, why: str, **details) -> BudgetExhausted:
        self._why = (why, details)
        self.stopped = BudgetExhausted(self.message())
        return self.stopped

    def message(self) -> str:
        """Why the run stopped, with what was spent by the time it is asked (requests in flight
        when it stopped settle after the first message was written)."""
        why, d = self._why
        spent = f"spent ${self.spent:.4f}{self._risk_note()}"
        if why == "no room":
            return (
                f"stopped by --max-cost ${self.limit:.4f}: {spent}; the next request could cost up to "
                f"${d['worst']:.4f} ({d['what']}), which does not fit; re-run with a higher --max-cost "
                "(or a lower --max-tokens) to continue where this run stopped"
            )
        return (
            f"stopped: {d['what']} was billed ${d['cost']:.4f}, more than its worst case ${d['held']:.4f}, so the "
            f"provider does not honour max_tokens and no further request can be bounded; {spent} of --max-cost "
            f"${self.limit:.4f}" + (", over the limit" if self.spent > self.limit else "")
        )

    async def reserve(self, worst: float | None, what: str) -> float:
        """Hold `worst` dollars for one request (waiting for requests in flight when only they stand
        in the way); raises BudgetExhausted when it cannot fit. Returns the amount held."""
        if self.stopped is not None:
            raise self.stopped
        if self.limit is None or worst is None:
            return 0.0
        async with self._changed:
            while True:
                if self.stopped is not None:
                    raise self.stopped
                committed = self.spent + self.at_risk
                if committed + self.reserved + worst <= self.limit:
                    self.reserved += worst
                    return worst
                if committed + worst > self.limit:
                    self._stop("no room", worst=worst, what=what)
                    self._changed.notify_all()
                    raise self.stopped
                await self._changed.wait()

    def settle(self, held: float, cost: float | None, *, billed_unknown: bool = False, what: str = "") -> None:
        """A request held `held` has ended: its bill was `cost`, or is unknown (`billed_unknown`:
        it may have been billed up to its worst case), or nothing (an error answer)."""
        if billed_unknown and held:
            self.at_risk += held
            self.at_risk_requests += 1
        elif cost:
            self.spent += cost
            if held and cost > held * (1 + 1e-9) and self.stopped is None:
                self._stop("overbilled", what=what, cost=cost, held=held)
        if self.limit is None:
            return
        self.reserved -= held
        # wake requests waiting for room; settle runs on the event loop, so schedule the notify
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _risk_note(self) -> str:
        if not self.at_risk_requests:
            return ""
        return f" (plus up to ${self.at_risk:.4f} for {self.at_risk_requests} timed-out request(s) the provider may have billed)"
