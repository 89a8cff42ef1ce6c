"""Constraint Violation: explicit constraints stated in the prompt, checked against the output.

Recognised (IFEval-style wording): a count of words, sentences, paragraphs or bullet points with
"at most / no more than / fewer than / less than / under / up to / within / exactly / at least",
"in N words", "N-word"; a list answer with more items than "exactly / at most / only N …" allows; "in JSON" (the output holds no JSON at all — malformed JSON is a
Formatting Error); "do not use any commas"; "end with …" / "start with …" a quoted phrase; "all lowercase" /
"all capital letters"; "respond in <language>" (English, French, German, Spanish, Italian,
Portuguese); "do not use the word …". A prompt with none of these is never flagged. The evidence
quotes where the output breaks the rule: the first sentence past the limit, the comma, the
output's last sentence, the offending word.
"""

from __future__ import annotations

import json
import re

from .base import Evidence, Finding, Title, output_of, sentences, task_of
from .language import language

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10, "twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30,
                 "fifty": 50, "hundred": 100, "a single": 1}
_N = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty|thirty|fifty|hundred|a single)"
_UNIT = r"(words?|sentences?|paragraphs?|bullet points?|bullets?)"
_BOUND = (r"(at most|no more than|not more than|fewer than|less than|under|up to|a maximum of|maximum of|"
          r"within|exactly|at least|a minimum of|no less than|more than)")
_COUNT = re.compile(
    rf"\b{_BOUND}\s+{_N}\s+{_UNIT}\b|\b(?:in|with|using|use)\s+{_N}\s+{_UNIT}\b|\b{_N}-({'word|sentence|paragraph'})\b",
    re.I,
)
_JSON = re.compile(r"\b(?:in|as|using|into|valid)\s+(?:a\s+|an\s+)?json\b|\bjson\s+(?:format|object)\b|\bformat(?:ted)?\s+as\s+json\b", re.I)
_NO_COMMAS = re.compile(r"\b(?:do not|don't|never)\s+(?:use|include)\s+(?:any\s+)?commas\b|\bwithout\s+(?:using\s+)?(?:any\s+)?commas\b|\brefrain from (?:using|the use of)\s+(?:any\s+)?commas\b|\bavoid (?:using\s+)?(?:any\s+)?commas\b", re.I)
_QUOTED = r"[\"“']([^\"”'\n]{1,80}?)[\"”']"
_END = re.compile(rf"\b(?:end|finish|conclude)\s+(?:your\s+\w+\s+|it\s+|the\s+\w+\s+)?with\s+(?:the\s+)?(?:exact\s+)?(?:phrase\s+|word\s+|sentence\s+)?{_QUOTED}", re.I)
# a placeholder in a quoted template ('The answer is N.', 'Answer: <letter>', '{answer}'): any text
_PLACEHOLDER = re.compile(r"<[^<>]{1,30}>|\{[^{}]{1,30}\}|\[[^\[\]]{1,30}\]|_{2,}|\.{3}|…|\b(?![AI]\b)[A-Z]\b")


def _phrase(template: str) -> str:
    """A regex for a quoted phrase the prompt asks for, its placeholders matching any text."""
    parts, at = [], 0
    for hole in _PLACEHOLDER.finditer(template):
        parts += [re.escape(template[at:hole.start()]), r".+?"]
        at = hole.end()
    parts.append(re.escape(template[at:]))
    return "".join(parts)


_START = re.compile(rf"\b(?:start|begin)\s+(?:your\s+\w+\s+|it\s+|the\s+\w+\s+)?with\s+(?:the\s+)?(?:exact\s+)?(?:phrase\s+|word\s+|sentence\s+)?{_QUOTED}", re.I)
_LOWER = re.compile(r"\b(?:all|only|entirely in|entire response (?:should be )?in)\s+lower\s*case\b|\bno capital letters\b|\blowercase letters only\b|\bin all lowercase\b", re.I)
_UPPER = re.compile(r"\b(?:all|only|entirely in)\s+(?:capital letters|upper\s*case|caps)\b|\bin all capitals\b", re.I)
_LANG = re.compile(r"\b(?:respond|answer|reply|write|response (?:should|must) be)\s+(?:only\s+|entirely\s+)?in\s+(English|French|German|Spanish|Italian|Portuguese)\b", re.I)
_FORBIDDEN = re.compile(rf"\b(?:do not|don't|never|without)\s+(?:use|using|include|including|mention|mentioning)\s+the\s+words?\s+{_QUOTED}", re.I)


def _number(token: str) -> int | None:
    if token.lower() in _NUMBER_WORDS:
        return _NUMBER_WORDS[token.lower()]
    # `\d+` matched it: Unicode digits (int("٣") is 3), but 5,000 of them make int() raise; a
    # bound that long is no bound a prompt sets (None: not read)
    return int(token) if len(token) <= 18 else None


def _units(out: str, unit: str) -> list[str]:
    unit = unit.lower()
    if unit.startswith("word"):
        return re.findall(r"\b\w[\w'’-]*", out)
    if unit.startswith("sentence"):
        return sentences(out)
    if unit.startswith("paragraph"):
        return [p.strip() for p in re.split(r"\n\s*\n", out) if p.strip()]
    return [m.group(0).strip() for m in re.finditer(r"^\s*(?:[-*•]|\d+[.)])\s+.+$", out, re.M)]


def _past_limit(out: str, unit: str, limit: int) -> str | None:
    """Verbatim text where the output passes `limit` units."""
    if unit.lower().startswith("word"):
        words = list(re.finditer(r"\b\w[\w'’-]*", out))
        if len(words) <= limit:
            return None
        start = words[limit].start()
        end = words[min(len(words), limit + 8) - 1].end()
        return out[start:end]
    items = _units(out, unit)
    return items[limit] if len(items) > limit else None


# "List exactly three trees", "give at most 5 examples": a count of the things a list answer holds
_LIST_COUNT = re.compile(rf"\b(exactly|at most|no more than|only|just)\s+{_N}\s+(?:[a-z-]+\s+){{0,2}}?[a-z-]+s\b", re.I)
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+\S", re.M)


def _list_count_violation(task: str, out: str) -> Evidence | None:
    """A list answer (2+ bulleted or numbered lines) with more items than "exactly / at most /
    only N …" allows (or fewer than "exactly N")."""
    items = [m.group(0) for m in re.finditer(r"^\s*(?:[-*•]|\d+[.)])\s+.+$", out, re.M)]
    if len(items) < 2:
        return None
    for m in _LIST_COUNT.finditer(task):
        bound, n = m.group(1).lower(), _number(m.group(2))
        if n is None:
            continue
        if len(items) > n or (bound == "exactly" and len(items) < n):
            rule = f"Lists {bound} {n} items ({m.group(0).strip()!r} in the prompt); the output lists {len(items)}"
            return Evidence(rule, items[n].strip() if len(items) > n else None)
    return None


def _count_violation(task: str, out: str) -> Evidence | None:
    listed = _list_count_violation(task, out)
    if listed:
        return listed
    for m in _COUNT.finditer(task):
        groups = m.groups()
        if groups[0]:
            bound, n, unit = groups[0].lower(), _number(groups[1]), groups[2]
        elif groups[3]:
            bound, n, unit = "at most", _number(groups[3]), groups[4]
        else:
            bound, n, unit = "at most", _number(groups[5]), groups[6]
        if n is None:
            continue
        have = len(_units(out, unit))
        plural = unit.lower().rstrip("s") + "s"
        rule = f"Uses {bound} {n} {plural} ({m.group(0).strip()!r} in the prompt); the output has {have}"
        too_many = (bound in ("at most", "no more than", "not more than", "up to", "a maximum of", "maximum of", "within") and have > n) \
            or (bound in ("fewer than", "less than", "under") and have >= n) or (bound == "exactly" and have > n)
        too_few = (bound in ("at least", "a minimum of", "no less than") and have < n) or (bound == "more than" and have <= n) \
            or (bound == "exactly" and have < n)
        if too_many:
            return Evidence(rule, _past_limit(out, unit, n))
        if too_few:
            return Evidence(rule)
    return None


def _has_json(out: str) -> bool:
    candidates = [out.strip()] + [b.strip() for b in re.findall(r"```(?:json)?\s*\n(.*?)```", out, re.S)]
    start = min((i for i in (out.find("{"), out.find("[")) if i >= 0), default=-1)
    if start >= 0:
        candidates.append(out[start:].strip())
    for c in candidates:
        try:
            json.loads(c)
            return True
        except json.JSONDecodeError:
            if c.startswith(("{", "[")):
                return True  # malformed JSON is a Formatting Error, not an ignored constraint
    return False


def _last_sentence(out: str) -> str | None:
    found = sentences(out)
    return found[-1] if found else None


def violations(task: str, out: str) -> list[Evidence]:
    found: list[Evidence] = []
    count = _count_violation(task, out)
    if count:
        found.append(count)
    if _JSON.search(task) and not _has_json(out):
        found.append(Evidence("Answers in JSON, as the prompt asks", sentences(out)[0] if sentences(out) else None))
    if _NO_COMMAS.search(task) and "," in out:
        i = out.index(",")
        left = out.rfind(" ", 0, max(0, i - 1)) + 1
        right = out.find(" ", i + 2)
        found.append(Evidence("Uses no commas, as the prompt asks", out[left:right if right > 0 else len(out)]))
    m = _END.search(task)
    if m and not re.search(_phrase(re.sub(r"[\s.!]+$", "", m.group(1))) + r"[\s\"'”“.!]*$", out, re.I):
        found.append(Evidence(f"Ends with \"{m.group(1)}\", as the prompt asks", _last_sentence(out)))
    m = _START.search(task)
    if m and not re.match(r"[\s\"'“*#]*" + _phrase(m.group(1).strip()), out, re.I):
        first = sentences(out)
        found.append(Evidence(f"Starts with \"{m.group(1)}\", as the prompt asks", first[0] if first else None))
    if _LOWER.search(task):
        caps = re.search(r"\b\w*[A-Z]\w*", out)
        if caps:
            found.append(Evidence("Writes only lowercase letters, as the prompt asks", caps.group(0)))
    if _UPPER.search(task):
        low = re.search(r"\b\w*[a-z]\w*", out)
        if low:
            found.append(Evidence("Writes only capital letters, as the prompt asks", low.group(0)))
    m = _LANG.search(task)
    if m:
        got = language(out)
        if got and got.casefold() != m.group(1).casefold():
            first = sentences(out)
            found.append(Evidence(f"Answers in {m.group(1).title()}, as the prompt asks", first[0] if first else None))
    for m in _FORBIDDEN.finditer(task):
        hit = re.search(r"(?<!\w)" + re.escape(m.group(1)) + r"(?!\w)", out, re.I)
        if hit:
            found.append(Evidence(f"Avoids the word \"{m.group(1)}\", as the prompt asks", hit.group(0)))
    return found


IGNORES_CONSTRAINT = Title("Ignores an explicit constraint of the prompt", "Constraint Violation")


def detect_constraint(rec: dict) -> Finding | None:
    out = output_of(rec)
    if not out.strip():
        return None
    broken = violations(task_of(rec), out)
    if not broken:
        return None
    return IGNORES_CONSTRAINT.finding(
        "constraint",
        f"The prompt sets a rule the output breaks: {broken[0].criterion.lower()}.",
        tuple(broken),
    )
