"""`LLMSettings`: how one run talks to its LLMs, the same for `analyze`, `verify`, `classify_titles`
and `discover`. The command line builds it once from its flags (cli.llm_settings); a caller of the
Python API passes `settings=LLMSettings(api_base=..., concurrency=...)`, and the defaults are the
command line's. What a run analyses (the store, the analyst, the models and datasets) is not here:
those are the functions' own arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .budget import DEFAULT_MAX_TOKENS
from .classify import DEFAULT_BATCH_SIZE


@dataclass(frozen=True)
class LLMSettings:
    api_base: str | None = None  # an OpenAI-compatible server's base URL (--api-base)
    concurrency: int = 4  # requests in flight at once, per model
    timeout: float = 120.0  # seconds before a request is retried
    backoff_s: float = 1.0  # the first retry's wait; it doubles with each retry
    max_tokens: int = DEFAULT_MAX_TOKENS  # most tokens an answer may take, reasoning included
    context_tokens: int | None = None  # the model's context window, for a model litellm does not know
    retry_cut_off: bool = False  # ask again the prompts whose answers an earlier run got cut off at max_tokens
    max_cost: float | None = None  # USD the run may spend at most; each request reserves its worst case
    # USD per million input and output tokens, for models litellm cannot price
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    batch_size: int = DEFAULT_BATCH_SIZE  # titles per classification call
    batch: bool = False  # send through the provider's batch API (taxonomy/batch.py)
    resume: bool = False  # collect the batches an earlier run submitted
    poll_interval: float = 30.0  # seconds between checks of a submitted batch

    def client_options(self) -> dict:
        """The keyword arguments of an `llm.LLMClient` these settings fix."""
        return {"api_base": self.api_base, "concurrency": self.concurrency, "timeout": self.timeout,
                "backoff_s": self.backoff_s, "max_tokens": self.max_tokens, "retry_cut_off": self.retry_cut_off}
