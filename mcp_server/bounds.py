"""Bounded answers for agents: how an answer's size is counted, how long texts are cut, and how a
page of rows is fitted under the token bound.

An agent's tool results land in its context window, and clients cut or refuse large ones (Claude
Code warns above 10,000 tokens and stops at 25,000 by default). So every answer is one JSON text
whose size is *counted*, not hoped for:

- **Tokens are estimated** by characters: an ASCII character counts a third of a token, a digit
  two thirds, any other character one whole token; the sum is rounded up. Real tokenizers give
  English prose about 4.5 characters a token, JSON 3 to 3.5, runs of digits 2 to 2.5 (numbers
  are most of a results table) and Chinese or Arabic about 1; tests/mcp_server/test_mcp.py checks that the
  estimate is at least what OpenAI's cl100k_base and o200k_base and the tokenizer Anthropic
  published for earlier Claude models count on every example answer, and at most 30% more on
  those of 500 tokens or more, so "10,000 tokens" by this count is at most 10,000 by theirs.
  Random strings (hashes, base64) cost real tokenizers up to about twice the estimate, rare
  Chinese characters and emoji up to three times.
- **Texts are cut** (outputs, inputs, references, summaries) at a length set per answer, with
  a note saying how many characters are left out; the answer counts what it cut.
- **Rows are paged**: an answer holds its fixed part (counts, tests, definitions) and as many
  rows as fit under the bound, up to `limit`; `page` says how many rows there are, which were
  shown, and the cursor that continues. A row never goes out half.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field

from core.names import json_visible

# the estimate in units: an ASCII character 1, a digit 2, any other character 3
UNITS_PER_TOKEN = 3
DEFAULT_TOKENS = 10_000
COUNTED = "ASCII characters 1/3 token each, digits 2/3, other characters 1, rounded up"
# text lengths tried, as shares of each answer's own, until its fixed part and one row fit
TEXT_SCALES = (1.0, 0.5, 0.25, 0.1)
MIN_TEXT = 20


def units(text: str) -> int:
    """The estimate before division: ASCII characters 1, digits 2 (1 + 1), others 3."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    digits = sum(map(text.count, "0123456789"))
    return ascii_chars + digits + 3 * (len(text) - ascii_chars)


def estimate_tokens(text: str) -> int:
    """The token count every answer states and is bounded by (see the module docstring)."""
    return math.ceil(units(text) / UNITS_PER_TOKEN)


def plain(value):
    """`value` with what JSON cannot hold made plain: NaN and infinities as null, dates as ISO
    strings, tuples as lists."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return value


def dumps(value) -> str:
    """Compact JSON, non-ASCII kept as is (an escape costs a model more tokens than the letter)."""
    # invisible characters (Cf) as \u escapes: the same strings to a JSON reader, nothing hidden
    # or reordered where an agent's client shows the answer
    return json_visible(json.dumps(plain(value), ensure_ascii=False, separators=(",", ":")))


class Clipper:
    """Cuts texts at `limit` characters (times `scale`: an answer too large at full length is
    built again with shorter texts) and counts what it cut, for the answer to say."""

    def __init__(self, limit: int, scale: float = 1.0):
        self.scale = scale
        self.limit = self._scaled(limit)
        self.texts = 0
        self.characters = 0

    def _scaled(self, limit: int) -> int:
        return max(int(limit * self.scale), MIN_TEXT)

    def __call__(self, text, limit: int | None = None) -> str | None:
        if text is None:
            return None
        text = str(text)
        limit = self.limit if limit is None else self._scaled(limit)
        if len(text) <= limit:
            return text
        cut = len(text) - limit
        self.texts += 1
        self.characters += cut
        return f"{text[:limit]}[… {cut:,} more characters]"

    def report(self, where: str) -> dict | None:
        if not self.texts:
            return None
        return {"texts": self.texts, "characters_left_out": self.characters, "at": self.limit,
                "whole_texts": where}


@dataclass
class Answer:
    """One tool's answer before it is fitted: a fixed part and the candidate rows of one page."""

    head: dict
    link: str
    rows_key: str | None = None
    rows: list[dict] = field(default_factory=list)
    total: int = 0
    offset: int = 0
    limit: int = 0
    noun: str = "rows"
    clipped: dict | None = None


# `Answer.rows_key` for rows of several kinds: each row names its list in "_section"
SECTIONS = "*"


class TooLarge(Exception):
    """The answer's fixed part and its first row do not fit under the bound together."""


def _page(a: Answer, shown: int, reason: str) -> dict:
    after = a.offset + shown
    left = max(a.total - after, 0)
    page = {"cursor": str(a.offset), "limit": a.limit, "shown": shown, "total": a.total,
            "next_cursor": str(after) if left else None}
    if left:
        page["left_out"] = (f"{left:,} more {a.noun} ({reason}): call again with the same arguments "
                            f"and cursor \"{after}\"")
    elif a.offset and not shown and a.offset >= a.total:
        page["left_out"] = f"the cursor is past the last of {a.total:,} {a.noun}"
    return page


def _assemble(a: Answer, rows: list[dict], reason: str) -> dict:
    body: dict = {}
    if a.rows_key is not None:
        body["page"] = _page(a, len(rows), reason)
    body["link"] = a.link
    body.update(a.head)
    if a.rows_key == SECTIONS:
        # rows of several kinds, each under its section's name, in the order they come
        for row in rows:
            row = dict(row)
            body.setdefault(row.pop("_section"), []).append(row)
    elif a.rows_key is not None:
        body[a.rows_key] = rows
    if a.clipped:
        body["clipped"] = a.clipped
    return body


def _sized(body: dict, budget: int) -> str:
    """The JSON text with its own size in it (the size's digits change the size: settle it)."""
    size = {"tokens": 0, "bytes": 0, "bound": budget, "counted_as": COUNTED}
    text = ""
    for _ in range(4):
        text = dumps({"size": size, **body})
        tokens, n = estimate_tokens(text), len(text.encode("utf-8"))
        if (tokens, n) == (size["tokens"], size["bytes"]):
            break
        size = {**size, "tokens": tokens, "bytes": n}
    return text


def fit(a: Answer, budget: int = DEFAULT_TOKENS) -> str:
    """The answer as JSON, with as many of its rows as fit under `budget` tokens (at most
    `limit`). Raises TooLarge when not even one row fits beside the fixed part (a page must move
    on, or the agent would ask for the same rows forever)."""
    rows = [plain(r) for r in a.rows[: a.limit]] if a.rows_key is not None else []
    sizes = [units(dumps(r)) + 1 for r in rows]
    # the fixed part alone, with its page and size blocks: the rows get what is left
    skeleton = _sized(_assemble(a, [], "the token bound"), budget)
    room = budget * UNITS_PER_TOKEN - units(skeleton) - 64
    shown, used = 0, 0
    while shown < len(rows) and used + sizes[shown] <= room:
        used += sizes[shown]
        shown += 1
    reason = "the token bound" if shown < len(rows) else "the limit"
    while True:
        text = _sized(_assemble(a, rows[:shown], reason), budget)
        if estimate_tokens(text) <= budget and (shown or not rows):
            return text
        if shown == 0:
            raise TooLarge(f"this answer is {estimate_tokens(text):,} tokens even with its texts cut short, "
                           f"over the bound of {budget:,}; narrow it with its filters or a smaller limit")
        shown -= 1
        reason = "the token bound"


def error(message: str, budget: int = DEFAULT_TOKENS, **details) -> str:
    """An error the agent can act on: the message and whatever helps (known names, close
    matches), lists cut to fit the bound with a count of what was left out."""
    body = {"error": message, **{k: v for k, v in details.items() if v not in (None, [], {})}}
    text = _sized(body, budget)
    while estimate_tokens(text) > budget:
        # the longest list loses its second half until the answer fits
        key = max((k for k, v in body.items() if isinstance(v, list) and v), key=lambda k: len(body[k]),
                  default=None)
        if key is None:
            body["error"] = Clipper(max(budget - 200, 40))(body["error"])
            return _sized(body, budget)
        values = body[key]
        kept = values[: len(values) // 2]
        left = body.get(f"{key}_left_out", 0) + len(values) - len(kept)
        body[key], body[f"{key}_left_out"] = kept, left
        text = _sized(body, budget)
    return text
