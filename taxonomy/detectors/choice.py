"""Multiple choice: which option a failed answer chose, and how that option differs from the gold.

The options are those the log gives, else the last block of 3+ lettered option lines in the
prompt ("a) …", "B. …"). An answer names an option by its key ("D", "(D)", "**D**", "Answer: D", "the answer is D"), by
its key and its text ("D. 30 million", "(D) 30 million" — the text must be the option's), or by
its text alone (a key whose text is spelled a little differently — similarity ≥ 0.8, closest to
that key's option — still names it: references carry typos). Options of which every one is a gold reference are not a multiple-choice task
(a reader listed the references as options).

A wrong choice is described by what is visible, never by a guess at the model's reasoning:

- the negation of the gold ("is" / "is not", "can" / "cannot"): the two options are the same
  words once negations are dropped;
- a neighbouring number: the two options are the same words once numbers are dropped, and no
  other option's number lies between the chosen and the gold one;
- broader / narrower: one option's content words strictly contain the other's ("Both a and b"
  against "Mixed feeding");
- all or none of the above;
- else a distractor.

None of these says *why* the model chose it, so each stays Hard to Analyze; the title names the
relation, the summary and evidence the chosen and the gold option. A wrong choice is the first
major error: chat-template tokens after the letter ("B<|end|><|endoftext|>") are read past, and
the summary says they are not why it failed.

An answer that names several options ("(A), (B), (C), or (D).", "A or B", "(A) … no, (B)")
chose none of them: `chosen_option` is None, and `detect_several_options` says so.
`store.agreement.shared_wrong_answers` groups failures that chose the same distractor across
models (computed when asked, since it depends on which models are in the store).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from fractions import Fraction

from ..catalog import HARD
from .base import (
    BARE_ANSWER,
    NO_VISIBLE_CAUSE,
    STOPWORDS,
    Evidence,
    Finding,
    Title,
    gold_refs,
    input_of,
    numbers_in,
    output_of,
    shorten,
    word_count,
)
from .shape import TEMPLATE_TOKEN, strip_template_tokens

_KEYED = re.compile(r"^\s*[\(\[]?\**\s*([A-Za-z0-9])\s*\**[\)\]]?\s*(?:[.):\-]\s*|\s+|$)(.*)$", re.S)
_ANSWER_LINE = re.compile(r"(?i)\b(?:answer|choice|option)\s*(?:is|:|=)?\s*(?:option\s*)?[\(\[]?\**([A-Z0-9])\**[\)\]]?(?![\w'])")
_NEGATIONS = frozenset("not no never cannot can't isn't aren't doesn't don't won't none neither nor without".split())


def _fold(text: str) -> str:
    """Case and spacing folded, a closing period dropped: symbols stay ("H ∨ ~R" is not "H ∨ R")."""
    return "".join(str(text).casefold().split()).rstrip(".")


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+(?:'[^\W_]+)?|[^\w\s]", str(text).casefold().replace("cannot", "can not"))


_OPTION_LINE = re.compile(r"(?m)^[ \t]*[\(\[]?([A-Ha-h])[\)\].:][ \t]+(\S[^\n]*?)[ \t]*$")


def options_in_text(text: str) -> dict[str, str] | None:
    """The last block of 3+ option lines ("a) …", "B. …", "(C) …") lettered from a/A in order, as
    a prompt that lists its options in its own text does (few-shot examples come before it; an
    "A: …" answer line after it is not a block)."""
    blocks: list[dict[str, str]] = []
    for m in _OPTION_LINE.finditer(text):
        key = m.group(1)
        if key in "aA":
            blocks.append({key: m.group(2)})
        elif blocks and chr(ord(list(blocks[-1])[-1]) + 1) == key:
            blocks[-1][key] = m.group(2)
    # the last block of 3+ options: a trailing "A: Let's think step by step." (the answer's own
    # label in a Q:/A: prompt) is not an option list
    full = [b for b in blocks if len(b) >= 3]
    return full[-1] if full else None


def options(rec: dict) -> dict[str, str]:
    """The task's options: those the log gives, else those its prompt lists."""
    return rec.get("choices") or options_in_text(input_of(rec)[-6000:]) or {}


def is_multiple_choice(rec: dict) -> bool:
    """Options of which at least one is not a gold reference."""
    choices = options(rec)
    gold = {g.strip() for g in gold_refs(rec)}
    return bool(choices) and any(str(v).strip() not in gold for v in choices.values())


def _key_of(text: str, choices: dict[str, str]) -> str | None:
    """The option `text` names: its key, its key with its own text ("D. 30 million"), or its text."""
    text = text.strip()
    if not text:
        return None
    if text in choices:
        return text
    by_text = {_fold(v): k for k, v in choices.items()}
    if _fold(text) in by_text:
        return by_text[_fold(text)]
    m = _KEYED.match(text)
    if m and m.group(1) in choices:
        rest = _fold(m.group(2))
        if not rest or rest == _fold(choices[m.group(1)]):
            return m.group(1)
        # the key with its option's text spelled a little differently ("d) Lateral cartilage" for an
        # option written "Lateral cailage"): the text must be closest to the key's own option
        close = {k: SequenceMatcher(None, rest, _fold(v)).ratio() for k, v in choices.items()}
        if close[m.group(1)] >= 0.8 and max(close, key=close.get) == m.group(1):
            return m.group(1)
    return None


_ANSWER_AT = re.compile(r"(?i)\b(?:answer|choice|option)\s*(?:is|:|=)")
# an option key as an answer names it: "(B)", "b)", or a bare capital letter
_KEY_NAMED = re.compile(r"(?<![\w'])(?:\(([A-Za-z])\)|([A-Za-z])\)|([A-Z]))(?![\w'])")
_CONNECTORS = re.compile(r"(?i)^[\s,;/.:]*(?:(?:or|and|either|both)\b[\s,;/.:]*)*$")


def named_options(rec: dict) -> list[str]:
    """The option keys the output's answer names, in order: in what follows its last "answer
    is" / "answer:", or in the whole output when it is short (at most 12 words). Bare capital
    letters count only in an answer made of keys alone ("A or B"); "(B)" and "b)" anywhere."""
    choices = options(rec)
    out = strip_template_tokens(output_of(rec)).strip()
    marks = list(_ANSWER_AT.finditer(out))
    if marks:
        segment = out[marks[-1].end():]
    elif word_count(out) <= 12:
        segment = out
    else:
        return []
    found = list(_KEY_NAMED.finditer(segment))
    bare_only = bool(found) and all(_CONNECTORS.match(piece) for piece in _KEY_NAMED.split(segment)[::4])
    keys = []
    for m in found:
        key = m.group(1) or m.group(2) or (m.group(3) if bare_only else None)
        if key and key in choices and key not in keys:
            keys.append(key)
    return keys


def chosen_option(rec: dict) -> str | None:
    """The key of the option the output chose, or None when it names none of them, or several.
    Chat-template tokens around the answer are read past."""
    choices = options(rec)
    if not choices:
        return None
    if len(named_options(rec)) > 1:
        return None
    out = strip_template_tokens(output_of(rec)).strip()
    for candidate in (rec.get("mapped_output") or "", out):
        key = _key_of(candidate, choices)
        if key:
            return key
    found = _ANSWER_LINE.findall(out)
    if found and found[-1] in choices:
        return found[-1]
    # "Answer: d) Dowry death": the answer after its marker
    m = re.search(r"(?i)\banswer\s*(?:is|:)\s*(.+?)\s*$", out)
    if m:
        return _key_of(m.group(1), choices)
    # "…, so C. Cannot be determined": an option's key and its own text ending the output
    m = re.search(r"(?:^|[\s,:;])([A-Za-z][.)]\s+[^\n]+?)\s*\.?$", out)
    key = _key_of(m.group(1), choices) if m else None
    return key if key and _fold(m.group(1)[2:]) else None


def gold_option(rec: dict) -> str | None:
    choices = options(rec)
    keys = {k for k in (_key_of(g, choices) for g in gold_refs(rec)) if k}
    return keys.pop() if len(keys) == 1 else None


def _content(text: str) -> set[str]:
    return {w for w in _words(text) if w.isalnum() and w not in STOPWORDS and w not in _NEGATIONS}


def _numbers(text: str) -> list[Fraction]:
    return [v for v, _ in numbers_in(str(text))]


def relation(chosen: str, gold: str, others: list[str]) -> str:
    """How the chosen option's text differs from the gold's: negation, numeric neighbour,
    broader, narrower, all/none of the above, or distractor."""
    a, b = _words(chosen), _words(gold)
    if re.fullmatch(r"(?:all|none|both|neither) (?:of the above|of them|of these|a and b|\w and \w)",
                    " ".join(w for w in a if w.isalnum())):
        return "all/none of the above"
    drop_neg = lambda t: [w for w in t if w not in _NEGATIONS]  # noqa: E731
    if a != b and drop_neg(a) == drop_neg(b):
        return "negation"
    na, nb = _numbers(chosen), _numbers(gold)
    strip_nums = lambda t: re.sub(r"-?\d[\d,]*(?:\.\d+)?", "#", str(t).casefold())  # noqa: E731
    if len(na) == len(nb) == 1 and na != nb and strip_nums(chosen) == strip_nums(gold):
        lo, hi = sorted((na[0], nb[0]))
        between = [v for o in others for v in _numbers(o)[:1] if lo < v < hi]
        return "numeric neighbour" if not between else "distractor"
    ca, cb = _content(chosen), _content(gold)
    if cb and ca > cb:
        return "broader"
    if ca and ca < cb:
        return "narrower"
    return "distractor"


# how a wrong option relates to the correct one: the finding's title, and the words its summary
# describes the option with; why a model chose it cannot be seen offline (Hard to Analyze)
_TITLES = {
    "negation": (Title("Chooses the negation of the correct option", HARD), "the negation of the correct option"),
    "numeric neighbour": (Title("Chooses a neighbouring numeric option", HARD), "a neighbouring number"),
    "broader": (Title("Chooses an option broader than the answer", HARD), "an option that says more than the correct one"),
    "narrower": (Title("Chooses an option narrower than the answer", HARD), "an option that says less than the correct one"),
    "all/none of the above": (Title("Chooses an all-or-none-of-the-above option", HARD),
                              "an all-or-none-of-the-above option"),
    "distractor": (Title("Chooses a distractor option", HARD), "a distractor"),
}


NOT_AN_OPTION = Title("Answer is not one of the option letters", "Formatting Error")


def detect_bad_option(rec: dict) -> Finding | None:
    # only options the log declares: a prompt that lists options may still be answered in prose
    if not rec.get("choices") or not is_multiple_choice(rec) or chosen_option(rec) is not None:
        return None
    out = output_of(rec).strip()
    return NOT_AN_OPTION.finding(
        "bad_option",
        f"The answer \"{shorten(out, 40)}\" cannot be mapped to any of the options "
        f"{', '.join(sorted(map(str, rec['choices'])))}, so the model ignored the required answer format.",
        (Evidence("Answers with one of the options", out if len(out) <= 200 else None),),
    )


def detect_wrong_option(rec: dict) -> Finding | None:
    """A wrong option, read past any chat-template tokens: the first major error, named before any
    surface symptom (described by `detect_chosen_distractor`)."""
    if not is_multiple_choice(rec):
        return None
    key, gold = chosen_option(rec), gold_option(rec)
    if key is None or gold is None or key == gold:
        return None
    return detect_chosen_distractor(rec)


SEVERAL_OPTIONS = Title("Names several options instead of choosing one", "Refusal")
ENDS_ON_SEVERAL_OPTIONS = Title("Ends naming several options, choosing none", HARD)


def detect_several_options(rec: dict) -> Finding | None:
    """A multiple-choice answer that names several options chose none. Alone (a dozen words at
    most beside the options) it is a non-answer (Refusal); after reasoning, why the model could
    not decide is not visible offline (Hard to Analyze)."""
    if not is_multiple_choice(rec):
        return None
    keys = named_options(rec)
    if len(keys) < 2:
        return None
    out = output_of(rec).strip()
    listed = ", ".join(keys)
    quote = out if len(out) <= 200 else None
    if word_count(strip_template_tokens(out)) - len(keys) <= 12:
        return SEVERAL_OPTIONS.finding(
            "several_options",
            f"The answer \"{shorten(out, 60)}\" names options {listed} and chooses none of them: a non-answer.",
            (Evidence("Chooses one option", quote),),
        )
    return ENDS_ON_SEVERAL_OPTIONS.finding(
        "several_options",
        f"After its reasoning the model names options {listed} and chooses none; why it could not decide needs a "
        f"reader to find.",
        (Evidence("Chooses one option", quote),),
    )


def detect_chosen_distractor(rec: dict) -> Finding | None:
    """A wrong option: which one, and how it differs from the gold — Hard to Analyze, honestly."""
    if not is_multiple_choice(rec):
        return None
    key = chosen_option(rec)
    out = output_of(rec).strip()
    if key is None:
        return None
    choices = options(rec)
    text = shorten(str(choices[key]), 60)
    quote = out if len(out) <= 200 else None
    bare = word_count(strip_template_tokens(out)) <= 4 + word_count(str(choices[key]))
    gold = gold_option(rec)
    if gold is None or gold == key:
        return (BARE_ANSWER if bare else NO_VISIBLE_CAUSE).finding(
            "chosen_option",
            f"The model chose option {key} (\"{text}\")"
            + (" with no reasoning, so why it chose this distractor cannot be seen." if bare else
               "; its reasoning shows no slip an offline check can name."),
            (Evidence(f"Picks the correct option (chose {key}: {text})", quote),),
        )
    kind = relation(str(choices[key]), str(choices[gold]), [str(v) for k, v in choices.items() if k not in (key, gold)])
    title, described = _TITLES[kind]
    gold_text = shorten(str(choices[gold]), 60)
    how = "with no reasoning, so why cannot be seen" if bare else "and its reasoning shows no slip an offline check can name"
    tokens = list(dict.fromkeys(m.group(0) for m in TEMPLATE_TOKEN.finditer(out)))
    after = (f" The chat-template tokens after it ({', '.join(tokens)}) are not why it failed: the choice is."
             if tokens else "")
    return title.finding(
        "chosen_option",
        f"The model chose {key} (\"{text}\") instead of {gold} (\"{gold_text}\") — {described} — {how}.{after}",
        (Evidence(f"Picks the correct option {gold} (\"{gold_text}\"), not {key} (\"{text}\")", quote),),
    )
