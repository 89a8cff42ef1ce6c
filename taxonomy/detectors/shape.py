"""The task's shape, read from its instructions, input, references and output, so that a detector
that does not apply to a shape stays silent on it:

- chat-template tokens (`<|end|>`, `<|eot_id|>`, `</s>` …), which belong to the serving stack,
  not to the answer (`TEMPLATE_TOKEN`, `strip_template_tokens`);
- step labels ("Thought 10:", "Step 3.", "(2)") and option or player labels ("A: purple",
  "(B)"), which number or name the parts of an answer and say nothing about its content
  (`label_spans`, `without_labels`);
- tasks whose answer is an order (sort, rank, arrange, "in alphabetical order": `asks_for_order`),
  where the same items in another order are another answer;
- generation tasks, whose output is meant to hold new content (write a new problem, a story, an
  email: `asks_for_new_content`), where new names and numbers are not invented details;
- grounded tasks, whose answer should come from a source the input gives (a passage, documents,
  a transcript, a record, data to summarise: `is_grounded`), the only tasks where a detail
  missing from the input can be called invented.
"""

from __future__ import annotations

import functools
import re

from .base import content_words, gold_refs, input_of, stem

TEMPLATE_TOKEN = re.compile(
    r"<\|[a-z_]{2,30}\|>|\[/?INST\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>|<(?:eos|bos|pad)>", re.I)


def strip_template_tokens(text: str) -> str:
    """The text without its chat-template tokens (and what a template puts after an end token:
    a header naming the next speaker)."""
    text = re.sub(r"<\|start_header_id\|>\w*<\|end_header_id\|>", " ", text)
    return TEMPLATE_TOKEN.sub(" ", text)


def answer_before_tokens(text: str, tokens: list[str]) -> str | None:
    """The answer a model gave before the chat-template `tokens` it left in (the first stretch
    of text between them that holds a word: "B" of "B<|end|><|assistant|>The answer is C"), or
    None when the text holds none of them. What follows an end token is the template running on
    into another turn, not the answer."""
    if not tokens:
        return None
    pieces = re.split("|".join(map(re.escape, sorted(set(tokens), key=len, reverse=True))), text)
    return next((p.strip() for p in pieces if re.search(r"\w", p)), "")


# a few-shot item's opening line in a prompt ("Question:", "Q:", "Problem:"), which a model that
# runs on past its answer writes again
_ITEM_OPENING = re.compile(r"(?m)^[ \t]*((?:question|q|problem|input|example|sentence|premise|passage)\s*\d*\s*:)", re.I)


def answer_before_continuation(rec: dict) -> str | None:
    """The answer before a few-shot continuation: when the prompt repeats an item's opening line
    ("Question:") and the output, after an answer, opens a new item with it, the text before
    that line; else None."""
    openings = [m.group(1).casefold() for m in _ITEM_OPENING.finditer(input_of(rec))]
    repeated = {o for o in openings if openings.count(o) >= 2}
    out = rec.get("output_text") or ""
    for m in _ITEM_OPENING.finditer(out):
        if m.group(1).casefold() in repeated and re.search(r"\w", out[:m.start()]):
            return out[:m.start()].strip()
    return None


# "Thought 10:", "Step 3.", "Stage 2)" — a word that numbers the parts of an answer, its number,
# and the punctuation after it; "(2)" or "2." opening a line
_STEP = re.compile(
    r"(?im)(?:\b(?:thought|step|stage|part|phase|claim|statement|sentence|paragraph|point|case|line|round|move|turn|"
    r"swap|iteration)\s*#?\s*(\d+)\s*[:.)\-])|(?:^[ \t]*\(?(\d+)[.)][ \t])")
# "A: purple", "(B)", "b) text" — a lone letter used as a label
_LETTER_LABEL = re.compile(r"(?<![\w'])\(?[A-Za-z]\)|(?<![\w'])[A-Z](?=\s*:)|(?<![\w'])[a-z](?=\)|:\s)")


def label_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the numbers that label steps ("Thought 10:" → the "10")."""
    spans = []
    for m in _STEP.finditer(text):
        group = 1 if m.group(1) else 2
        spans.append(m.span(group))
    return spans


def without_labels(text: str) -> str:
    """The text with its letter labels ("A:", "(B)", "c)") blanked out, for counting its words."""
    return _LETTER_LABEL.sub(" ", text)


def _task_text(rec: dict) -> str:
    text = input_of(rec)
    head_tail = text if len(text) <= 3000 else text[:1500] + "\n" + text[-1500:]
    return "\n".join(t for t in (rec.get("instructions"), head_tail) if t)


_ORDER = re.compile(r"\b(?:sort|sorted|re-?order|rank|arrange|alphabeti[sz]e|put\b[^.\n]{0,40}\bin order|"
                    r"in (?:alphabetical|ascending|descending|chronological|reverse|increasing|decreasing) order)\b", re.I)


def asks_for_order(rec: dict) -> bool:
    """The task asks for items in an order: the order is part of the answer."""
    return bool(_ORDER.search(_task_text(rec)))


# asked to write something new: a problem, a story, a poem, an email …
_NEW_THINGS = (r"(?:problems?|questions?|quiz(?:zes)?|exercises?|puzzles?|riddles?|examples?|sentences?|stor(?:y|ies)|"
               r"poems?|haikus?|limericks?|songs?|lyrics|jokes?|dialogues?|scenes?|essays?|e-?mails?|letters?|"
               r"messages?|tweets?|posts?|slogans?|taglines?|advertisements?|ads?|names?|titles?|recipes?|"
               r"descriptions?|speech(?:es)?|toasts?|invitations?|reviews?|bios?|biograph(?:y|ies)|captions?|"
               r"headlines?|scripts?|plots?|characters?|word problems?|test cases?)")
_GENERATE = re.compile(
    rf"\b(?:write|compose|create|generate|draft|invent|make up|come up with|design|craft|produce|devise|give me|"
    rf"suggest|propose|brainstorm)\b(?:\s+\S+){{0,6}}?\s+{_NEW_THINGS}\b", re.I)
# … unless it is to be drawn from a source the input gives
_FROM_SOURCE = re.compile(
    r"\bsummari[sz]e\b|\bsummary of\b|\bbased (?:only |solely )?on the\b|\baccording to the\b|"
    r"\bfrom the (?:text|passage|article|document|transcript|conversation|dialogue|record|note|report|context|"
    r"excerpt|table|data|email|story|visit|chart|abstract)\b", re.I)


def asks_for_new_content(rec: dict) -> bool:
    """A generation task: the output is meant to hold new content (a new problem, a story, an
    email), so new names and numbers in it are the task, not invented details."""
    text = _task_text(rec)
    return bool(_GENERATE.search(text)) and not _FROM_SOURCE.search(text)


# the input gives a source: a labelled passage, documents, a transcript or record, data to use
_SOURCE = re.compile(
    r"(?im)^\s*(?:passage|context|document|documents|article|text|transcript|conversation|dialogue|record|"
    r"note|clinical note|report|story|excerpt|abstract|source|sources|background information|evidence|"
    r"table|data|visit|hpi|history|findings|discharge|results|ed record|clinic note|drug information|"
    r"problem list|prescription|email|review)\s*(?:\[\d+\]|\d+)?\s*:|"
    r"\[(?:doctor|patient|speaker|interviewer)\]|^\s*(?:doctor|patient|speaker\s*\d*|dr\.?\s*\w+)\s*:")
REFERENCE_FROM_INPUT = 0.6


@functools.lru_cache(maxsize=256)
def _input_stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in content_words(text))


def is_grounded(rec: dict) -> bool:
    """The answer should come from a source the input gives: the input marks one (a passage,
    documents, a transcript, a record), the instructions say to use it ("summarize", "based on
    the text", "from the transcript"), or the gold references are drawn from the input (most of
    their content words occur in it)."""
    if asks_for_new_content(rec):
        return False
    text = _task_text(rec)
    if _SOURCE.search(input_of(rec)) or _FROM_SOURCE.search(text):
        return True
    ref_stems = {stem(w) for r in gold_refs(rec) for w in content_words(r)}
    if len(ref_stems) < 3:
        return False
    return len(ref_stems & _input_stems(input_of(rec))) >= REFERENCE_FROM_INPUT * len(ref_stems)
