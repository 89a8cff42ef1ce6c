"""What the harness and the instructions say about the output's form: leftover chat-template
tokens, a generation cut at the token limit, and commentary where only the answer was asked for.

- Chat-template tokens: `<|im_end|>`, `<|eot_id|>`, `<|endoftext|>`, `<|start_header_id|>` and
  the other `<|…|>` specials, `[INST]` / `[/INST]`, `<<SYS>>`, `<s>` / `</s>`,
  `<start_of_turn>` / `<end_of_turn>`, `<eos>`, `<bos>`, `<pad>` — in the output and not in the
  prompt or references (a prompt that shows them makes them fair to repeat) — only when they are
  why the answer failed: the answer before them is right (`taxonomy.offline` judges that answer
  first; a wrong one is the first error, and an unjudged one leaves the failure Hard to Analyze).
- Cut at the token limit: the log says so (`finish_reason` "length" / "max_tokens", or
  `output_tokens` ≥ the run's `max_tokens`), unless its token count stays under the limit or the
  output is a whole multiple-choice answer (HELM's MMLU allows one token: the letter is complete). When the log records neither (no finish reason and
  no token count), an output of 100+ words whose last line stops mid-sentence — no closing
  punctuation, not a heading, list label, code or table row, and its last word a word — is
  reported as stopping mid-sentence (its unfinished sentence must be 4+ plain words: no labels,
  markup or formulas, which end without punctuation by design). A log that says generation stopped on its own rules it out.
  A last line that states the answer ("So the answer is anchor crescent galaxy"), or any last
  line where the reference is a bare list of words (a sorting task's answer), is not an
  unfinished sentence.
- Only the answer asked for: instructions like "only output the translation", "respond with only
  …", "do not add any explanation", "nothing else" — and an output that adds a commentary line
  ("Note: …", "Explanation: …", "Here is the rewritten sentence:", "I hope this helps") beside its
  answer. Without such an instruction an explanation is not an error: it is never reported.
"""

from __future__ import annotations

import re

from .base import (
    STOPWORDS,
    Evidence,
    Finding,
    Title,
    answer_number,
    gold_refs,
    input_of,
    output_of,
    word_count,
)
from .choice import chosen_option, gold_option, is_multiple_choice
from .normalise import marked_answer
from .shape import TEMPLATE_TOKEN


def leftover_tokens(rec: dict) -> list[str]:
    """The chat-template tokens in the output that the prompt and references do not show."""
    prompt = "\n".join([input_of(rec), rec.get("prompt_text") or "", rec.get("instructions") or ""] + gold_refs(rec))
    return [m.group(0) for m in TEMPLATE_TOKEN.finditer(output_of(rec)) if m.group(0) not in prompt]


def answer_is_wrong(rec: dict) -> bool:
    """The answer is visibly wrong: another option than the gold one, or a final number of
    another value than a numeric reference's."""
    if is_multiple_choice(rec):
        key, gold = chosen_option(rec), gold_option(rec)
        return key is not None and gold is not None and key != gold
    refs = [answer_number(r) for r in gold_refs(rec) if len(r.split()) <= 3]
    got = answer_number(output_of(rec))
    return bool(refs) and all(refs) and got is not None and all(got[0] != r[0] for r in refs)


TEMPLATE_TOKENS = Title("Leaves chat-template tokens in the output", "Formatting Error")


def detect_template_tokens(rec: dict) -> Finding | None:
    """Leftover template tokens. `taxonomy.offline` calls it only once the answer before them is
    shown right: after a wrong or unjudged answer they are not why it failed."""
    tokens = leftover_tokens(rec)
    if not tokens:
        return None
    shown = ", ".join(dict.fromkeys(tokens))
    return TEMPLATE_TOKENS.finding(
        "template_tokens",
        f"The output carries chat-template control tokens ({shown}) that the serving stack should have stripped; "
        f"the text a user or a metric sees is not clean.",
        tuple(Evidence("Contains only the answer text, no template tokens", t) for t in list(dict.fromkeys(tokens))[:3]),
    )


_LENGTH_REASONS = {"length", "max_tokens", "max_length", "max_new_tokens", "model_length"}
_CLOSED = re.compile(r"""[.!?…。！？:;)\]}"'”’»*`|>]\s*$""")


def _tail(out: str, n: int = 12) -> str:
    words = list(re.finditer(r"\S+", out))
    return out[words[max(0, len(words) - n)].start():].strip() if words else ""


def _stops_mid_sentence(out: str) -> bool:
    """Prose of 100+ words whose last sentence breaks off: its last line has no closing
    punctuation and its unfinished sentence is 4+ plain words (no markup, labels or formulas),
    and not an answer statement ("So the answer is …")."""
    lines = [line for line in out.rstrip().splitlines() if line.strip()]
    if word_count(out) < 100 or not lines or "```" in out[-400:]:
        return False
    last = lines[-1].strip()
    if _CLOSED.search(last) or re.match(r"^(?:#|\|)", last):
        return False
    fragment = re.split(r"[.!?]\s", last)[-1]
    if re.search(r"[:$=|<>{}\[\]\\]", fragment):
        return False
    answer = marked_answer(fragment)
    if answer and fragment.rstrip().endswith(answer):
        return False  # it ends by stating its answer: complete, whatever the answer's shape
    return bool(re.search(r"[^\W\d_]$", fragment)) and len(re.findall(r"[^\W\d_]{2,}", fragment)) >= 4


def _bare_word_list(text: str) -> bool:
    """A reference that is a list of words and nothing else (a sorting task's answer): no
    sentence punctuation and no function word."""
    words = text.split()
    return len(words) >= 2 and all(w.isalpha() for w in words) and not any(w.casefold() in STOPWORDS for w in words)


TOKEN_LIMIT = Title("Cut off at the output token limit", "Incomplete Content")


def detect_token_limit(rec: dict) -> Finding | None:
    out = output_of(rec)
    if not out.strip():
        return None
    reason = (rec.get("finish_reason") or "").casefold()
    limit, used = rec.get("max_tokens"), rec.get("output_tokens")
    if limit and used is not None and used < limit:
        return None  # the counts say the limit was not reached, whatever the reason says
    if chosen_option(rec) is not None:
        return None  # a whole multiple-choice answer (one letter may be all the limit allows)
    tail = _tail(out)
    if reason in _LENGTH_REASONS or (limit and used and used >= limit):
        why = f"finish reason \"{rec['finish_reason']}\"" if reason in _LENGTH_REASONS else f"{used} of {limit} output tokens"
        return TOKEN_LIMIT.finding(
            "token_limit",
            f"Generation stopped at the harness's token limit ({why}), so the answer ends unfinished: \"…{tail}\".",
            (Evidence("Finishes the answer within the token limit", tail),),
        )
    return None


MID_SENTENCE = Title("Output stops mid-sentence", "Incomplete Content")


def detect_mid_sentence(rec: dict) -> Finding | None:
    """The token limit's trace when the log records no finish reason and no token count."""
    out = output_of(rec)
    if rec.get("finish_reason") or rec.get("output_tokens") is not None:
        return None
    refs = gold_refs(rec)
    if refs and all(_bare_word_list(r) for r in refs):
        return None  # the answer is a bare list of words, which ends without punctuation by design
    if _stops_mid_sentence(out):
        tail = _tail(out)
        return MID_SENTENCE.finding(
            "mid_sentence",
            f"The answer breaks off mid-sentence (\"…{tail}\"), as a generation cut at a length limit does; the log "
            f"records no finish reason or token count to confirm it.",
            (Evidence("Finishes its last sentence", tail),),
        )
    return None


_ONLY = re.compile(
    r"\b(?:only|just)\s+(?:output|return|respond with|reply with|give|provide|write|print|answer with)\b|"
    r"\b(?:output|return|respond with|reply with|give|provide|write|print|answer with)\s+only\b|"
    r"\b(?:respond|reply|answer)\s+(?:with|using)\s+(?:only|just)\b|"
    r"\b(?:do not|don't|never)\s+(?:add|include|provide|give|write|output)\s+(?:any\s+)?(?:other\s+|additional\s+|extra\s+)?"
    r"(?:explanations?|comments?|commentary|notes?|text|words|anything else|context|reasoning)\b|"
    r"\bwithout\s+(?:any\s+)?(?:additional\s+|extra\s+)?(?:explanations?|comments?|commentary|notes?|additional text)\b|"
    r"\bnothing else\b|\bno (?:additional|extra) (?:text|comments?|explanations?)\b",
    re.I)
_COMMENTARY = re.compile(
    r"(?im)^[ \t>*_(\[]*(?:(?:translation\s+)?notes?|explanation|comments?|remarks?|n\.b\.|p\.s\.|disclaimer|rationale|"
    # the same labels in the other languages the language detectors know
    r"примечание|пояснение|комментарий|remarque|explication|commentaire|anmerkung|hinweis|erklärung|"
    r"nota|explicación|comentario|spiegazione|explicação)\b\s*[:\-–)].*$|"
    r"^[ \t*_]*(?:here(?:'s| is| are)\b|sure[,!.]|certainly[,!.]|of course[,!.]|okay[,!.]|ok[,!.])[^\n]*$|"
    r"^[^\n]*\b(?:i hope this helps|let me know if|feel free to)\b[^\n]*$|"
    r"^[ \t]*\(?(?:i (?:have |'ve )?(?:changed|replaced|removed|rewrote|rephrased|translated|kept|made|used|softened|omitted))\b[^\n]*$")


def only_answer_asked(rec: dict) -> re.Match | None:
    text = "\n".join(t for t in (rec.get("instructions"), input_of(rec)[:1500], input_of(rec)[-1500:]) if t)
    return _ONLY.search(text)


def _commentary(out: str) -> re.Match | None:
    """A commentary line beside an answer: there must be other, non-commentary text too."""
    m = _COMMENTARY.search(out)
    if not m:
        return None
    rest = (out[:m.start()] + out[m.end():]).strip()
    return m if word_count(rest) >= 1 else None


def commentary_against_only(rec: dict) -> tuple[re.Match, re.Match] | None:
    """(the commentary line, the instruction that asks for the answer alone), when the output adds
    one against such an instruction."""
    m = _commentary(output_of(rec))
    rule = only_answer_asked(rec) if m else None
    return (m, rule) if rule else None


def answer_without_commentary(rec: dict) -> str | None:
    """The output without its commentary lines, when it adds commentary against "only the answer"."""
    if commentary_against_only(rec) is None:
        return None
    return _COMMENTARY.sub("", output_of(rec)).strip()


FORBIDDEN_COMMENTARY = Title("Adds commentary the instructions forbid", "Constraint Violation")


def detect_extra_commentary(rec: dict) -> Finding | None:
    """Commentary the instructions forbid. `taxonomy.offline` calls it only once the answer beside
    the commentary is shown right: beside a wrong answer the commentary is not why it failed."""
    found = commentary_against_only(rec)
    if found is None:
        return None
    m, rule = found
    line = m.group(0).strip()
    return FORBIDDEN_COMMENTARY.finding(
        "extra_commentary",
        f"The instructions ask for the answer alone (\"{rule.group(0)}\") but the output adds \"{line[:80]}\".",
        (Evidence(f"Gives only the answer, as the instructions ask (\"{rule.group(0)}\")", line),),
    )
