"""What fits in an analyst's context, and the one rule for cutting what does not.

The budget of a request is the model's context window (litellm's model info; `--context-tokens`
for a model litellm does not know; DEFAULT_CONTEXT_TOKENS otherwise) less the tokens reserved for
its answer (`--max-tokens`, at most half the window) and a margin for the chat template. A prompt
within the budget is sent whole. A prompt over it is cut by the stated rule: the largest fields
first — each field longer than a common level is cut down to that level, the highest level at
which the prompt fits — keeping each cut field's head (three quarters) and tail (one quarter,
where final answers sit) around a visible marker; what was cut is recorded with the analysis
(`analyses.context_note`).

Tokens are counted with litellm's token counter for the model (tiktoken's cl100k_base when the
model's own tokenizer is unknown).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

DEFAULT_CONTEXT_TOKENS = 32_768
MARGIN_TOKENS = 256
MARKER = "\n[… {n} tokens cut by Faultline to fit the analyst's context …]\n"
_MARKER_TOKENS = 24
HEAD_SHARE = 0.75


@dataclass(frozen=True)
class ContextBudget:
    """`tokens`: the most prompt tokens (system and user messages) one request may take."""

    tokens: int
    window: int
    source: str
    count: Callable[[str], int]

    def describe(self) -> str:
        return f"{self.tokens:,}-token budget ({self.window:,}-token window from {self.source})"


def model_window(model: str) -> int | None:
    """The model's context window (input tokens) in litellm's model info, or None."""
    from . import provider

    try:
        info = provider.litellm().get_model_info(model)
    except Exception:
        return None
    window = info.get("max_input_tokens") or info.get("max_tokens")
    return int(window) if window else None


def token_counter(model: str) -> Callable[[str], int]:
    from . import provider

    lit = provider.litellm()

    def count(text: str) -> int:
        if not text:
            return 0
        try:
            return int(lit.token_counter(model=model, text=text))
        except Exception:
            # no tokenizer at all: about three characters per token, on the safe side
            return len(text) // 3 + 1

    return count


def context_budget(model: str, max_tokens: int, context_tokens: int | None = None) -> ContextBudget:
    """The budget of `model`'s requests; `context_tokens` (the user's word) overrides litellm's."""
    if context_tokens is not None:
        window, source = context_tokens, "--context-tokens"
    else:
        window = model_window(model)
        source = "litellm's model info" if window else "the default for models litellm does not know"
        window = window or DEFAULT_CONTEXT_TOKENS
    reserve = min(max_tokens, window // 2)
    return ContextBudget(max(1, window - reserve - MARGIN_TOKENS), window, source, token_counter(model))


def cut(text: str, keep: int, count: Callable[[str], int]) -> str:
    """`text` cut to about `keep` tokens: its head (HEAD_SHARE of them) and its tail around a
    marker saying how many were cut, split at whitespace where there is some nearby."""
    size = count(text)
    if keep >= size:
        return text
    head_tokens = int(keep * HEAD_SHARE)
    head = _snap(text, _longest(lambda n: count(text[:n]) <= head_tokens, len(text)), back=True)
    tail = _snap(text, len(text) - _longest(lambda n: count(text[len(text) - n:]) <= keep - head_tokens, len(text)),
                 back=False)
    if tail <= head:
        return text
    return text[:head] + MARKER.format(n=f"{size - keep:,}") + text[tail:]


def _longest(fits: Callable[[int], bool], limit: int) -> int:
    """The largest n in [0, limit] with fits(n) (fits is monotone: true up to some n)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _snap(text: str, pos: int, back: bool) -> int:
    """`pos` moved to the nearest whitespace within 40 characters, towards what is cut away."""
    if back:
        i = text.rfind(" ", max(0, pos - 40), pos + 1)
        return i if i > 0 else pos
    i = text.find(" ", pos, pos + 40)
    return i + 1 if i >= 0 else pos


def fit(fields: dict[str, str], render: Callable[[dict[str, str]], int], budget: ContextBudget | None,
        labels: dict[str, str]) -> tuple[dict[str, str], str | None]:
    """The fields, cut by the rule when the prompt `render(fields)` (its token count) exceeds the
    budget, and a note of what was cut (None: nothing)."""
    if budget is None:
        return fields, None
    total = render(fields)
    if total <= budget.tokens:
        return fields, None
    sizes = {k: budget.count(v) for k, v in fields.items()}
    fixed = max(0, total - sum(sizes.values()))
    room = budget.tokens - fixed - _MARKER_TOKENS * len(fields)
    level = _level(sorted(sizes.values(), reverse=True), room)
    for _ in range(8):
        kept = {k: cut(v, level, budget.count) if sizes[k] > level else v for k, v in fields.items()}
        if render(kept) <= budget.tokens or level <= 1:
            break
        level = max(1, int(level * 0.9))
    cuts = [f"{labels.get(k, k)} {sizes[k]:,}→{level:,}" for k in sorted(fields, key=lambda k: -sizes[k]) if sizes[k] > level]
    note = (f"cut to fit the {budget.describe()}: the prompt had {total:,} tokens; largest fields first, "
            f"head and tail kept: " + ", ".join(cuts) + " tokens")
    return kept, note


def _level(sizes_desc: list[int], room: int) -> int:
    """The highest level L with sum(min(size, L)) <= room: what the largest fields are cut to."""
    if room <= 0:
        return 1
    rest = sum(sizes_desc)
    for i, size in enumerate(sizes_desc):
        rest -= size
        # fields 0..i cut to L, the others whole: L * (i + 1) + rest <= room
        level = (room - rest) // (i + 1)
        following = sizes_desc[i + 1] if i + 1 < len(sizes_desc) else 0
        if level >= following:
            return max(1, min(level, size))
    return 1
