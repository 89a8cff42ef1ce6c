"""Prompt echo (Irrelevant/Off-Topic): the output copies a long run of the prompt's instructions
or question back instead of answering. On a task that asks for new content (write a new
problem, a story) a copy of the prompt's own example is the output breaking that request:
"Copies the prompt's example instead of writing a new one" (Constraint Violation). Also `answer_part`: the output before any such copy, which
the content detectors judge (a model that answers and then rambles on with the prompt is judged
on its answer).
"""

from __future__ import annotations

import re

from .base import (
    Evidence,
    Finding,
    Title,
    content_words,
    gold_refs,
    input_of,
    labelled_items,
    norm,
    output_of,
    shorten,
    stem,
    word_count,
)
from .shape import asks_for_new_content

ECHO_MIN_WORDS = 15
# words that mark a copied span as the task's instructions or question rather than passage text
_META = {"format", "output", "answer", "return", "respond", "response", "ensure", "instruction",
         "instructions", "label", "question", "following", "text", "example", "entities", "entity"}


def _tokens_with_spans(text: str) -> list[re.Match]:
    return list(re.finditer(r"\w+", text))


SHINGLE = 8


def longest_copied_span(output: str, source: str) -> tuple[int, int] | None:
    """Character span of the longest run of words of `output` whose every 8-word window occurs in
    `source` (case folded): a copy of at least 8 words, found in linear time."""
    out_toks = _tokens_with_spans(output)
    out = [t.group(0).casefold() for t in out_toks]
    src = [t.group(0).casefold() for t in _tokens_with_spans(source)]
    if len(out) < SHINGLE or len(src) < SHINGLE:
        return None
    shingles = {tuple(src[i:i + SHINGLE]) for i in range(len(src) - SHINGLE + 1)}
    best, best_start, run_start = 0, 0, None
    for i in range(len(out) - SHINGLE + 1):
        if tuple(out[i:i + SHINGLE]) in shingles:
            if run_start is None:
                run_start = i
            length = i - run_start + SHINGLE
            if length > best:
                best, best_start = length, run_start
        else:
            run_start = None
    if best == 0:
        return None
    return out_toks[best_start].start(), out_toks[best_start + best - 1].end()


def _echo(rec: dict) -> tuple[int, int] | None:
    """Span of the output that copies 15+ words of the prompt's instructions or question."""
    out, source = output_of(rec), input_of(rec)
    if word_count(out) < ECHO_MIN_WORDS or word_count(source) < ECHO_MIN_WORDS:
        return None
    span = longest_copied_span(out[:4000], source[-8000:])
    if span is None:
        return None
    copied = out[span[0]:span[1]]
    if word_count(copied) < ECHO_MIN_WORDS or not (_META & set(re.findall(r"\w+", copied.casefold()))):
        return None
    if any(norm(copied) in norm(ref) for ref in gold_refs(rec)):
        return None
    return span


def answer_part(rec: dict) -> str:
    """The output before any copied prompt text: what the model offered as its answer."""
    out = output_of(rec)
    span = _echo(rec)
    return out[: span[0]] if span else out


def _no_answer_before(prefix: str, rec: dict) -> bool:
    """Whether the text before the copy is no answer: at most 25 words, no "label: value" item,
    and either itself copied from the prompt or sharing no content word with the reference."""
    if word_count(prefix) > 25 or labelled_items(prefix):
        return False
    # a prefix that is itself mostly copied from the prompt is part of the echo
    copied = longest_copied_span(prefix, input_of(rec))
    if copied and word_count(prefix[copied[0]:copied[1]]) >= 0.6 * word_count(prefix):
        return True
    ref_stems = {stem(w) for r in gold_refs(rec) for w in content_words(r)}
    return not ({stem(w) for w in content_words(prefix)} & ref_stems)


_EXAMPLE = re.compile(r"(?im)^\s*(?:for\s+)?examples?\b[^\n]{0,20}?[:.]?")


def _copies_an_example(rec: dict, copied: str) -> bool:
    """The copied words come from an example the prompt gives ("Example: …")."""
    words = re.findall(r"\w+", copied)[:8]
    source = input_of(rec)
    m = re.search(r"\W+".join(map(re.escape, words)), source, re.I)
    if not m:
        return False
    line_start = source.rfind("\n", 0, m.start()) + 1
    return bool(_EXAMPLE.match(source, line_start))


COPIES_EXAMPLE = Title("Copies the prompt's example instead of writing a new one", "Constraint Violation")
COPIES_INSTRUCTIONS = Title("Copies the instructions instead of doing the task", "Irrelevant/Off-Topic")


def detect_prompt_echo(rec: dict) -> Finding | None:
    """Reported when nothing like an answer comes before the copy; an answer followed by a copy
    of the prompt is judged on its answer first."""
    out = output_of(rec)
    span = _echo(rec)
    if span is None or not _no_answer_before(out[: span[0]], rec):
        return None
    copied = out[span[0]:span[1]]
    n = word_count(copied)
    if asks_for_new_content(rec) and _copies_an_example(rec, copied):
        return COPIES_EXAMPLE.finding(
            "prompt_echo",
            f"Asked for something new, the model copies {n} words of the prompt's own example: \"{shorten(copied, 90)}\".",
            (Evidence("Writes something new, as the task asks", copied),),
        )
    return COPIES_INSTRUCTIONS.finding(
        "prompt_echo",
        f"Instead of answering, the model copies {n} words of the prompt back: \"{shorten(copied, 90)}\".",
        (Evidence("Answers instead of repeating the prompt", copied),),
    )
