"""What every detector shares: the finding it returns and the text helpers it reads a failure with.

A failure record is the dict `store.analysis.failures` returns: `input_text` / `input_messages`,
`refs` ([{text, correct}]), `choices`, `output_text`, `mapped_output`, `dataset`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from fractions import Fraction

from ..catalog import HARD


@dataclass(frozen=True)
class Evidence:
    """One stage-1 criterion the output fails: a verbatim quote from the output that shows it, or
    (quote None) a criterion that names what the output is missing."""

    criterion: str
    quote: str | None = None
    # what the criterion's comment should say instead of the finding's summary (a judge's words)
    comment: str | None = None


@dataclass(frozen=True)
class Finding:
    detector: str
    title: str
    summary: str
    evidence: tuple[Evidence, ...] = field(default_factory=tuple)
    # why the failure is not the model's error (the scoring's or the reference's), else None
    no_model_error: str | None = None
    # the category of the error the title names (its Title's); None for a title in a judge's own
    # words, which the offline title classifier files
    category: str | None = None


# Every fixed title the detectors give, by its words (each Title adds itself): what tells them
# apart from titles in a judge's words.
TITLES: dict[str, "Title"] = {}


@dataclass(frozen=True)
class Title:
    """A fixed title of a detector's findings with the category of erroratlas-v1 the error it names
    belongs to (NO_ERROR for a failure that is not the model's), declared once as a constant of the
    detector's module: its findings carry the category to the stored label, so no classifier has to
    guess it back from the words."""

    text: str
    category: str

    def __post_init__(self) -> None:
        if TITLES.setdefault(self.text, self) != self:
            raise ValueError(f"{self.text!r} is declared with two categories: {TITLES[self.text].category}, {self.category}")

    def finding(self, detector: str, summary: str, evidence: tuple[Evidence, ...] = (),
                no_model_error: str | None = None) -> Finding:
        return Finding(detector, self.text, summary, evidence, no_model_error, self.category)


# titles more than one family gives
BARE_ANSWER = Title("Bare answer without reasoning", HARD)
NO_VISIBLE_CAUSE = Title("Wrong answer with no visible cause", HARD)
PART_OF_ANSWER = Title("Gives only part of the answer", "Incomplete Content")


@dataclass(frozen=True)
class Look:
    """A detector looked and could not conclude: its shape applied but the evidence it needs was
    missing or ambiguous. The analyst goes on; if nothing names the error, the Hard to Analyze
    finding says which detectors looked and why they stayed silent."""

    detector: str
    reason: str


def output_of(rec: dict) -> str:
    return rec.get("output_text") or ""


def input_of(rec: dict) -> str:
    """The prompt as text: `input_text`, else the contents of its chat messages."""
    if rec.get("input_text"):
        return rec["input_text"]
    parts = []
    for m in rec.get("input_messages") or []:
        content = m.get("content") if isinstance(m, dict) else m
        if isinstance(content, list):
            content = " ".join(str(c.get("text", "")) if isinstance(c, dict) else str(c) for c in content)
        parts.append(str(content or ""))
    return "\n".join(parts)


_LAST_QUESTION = re.compile(r"(?im)^(?:question|q|problem)\s*[:.]")


def task_of(rec: dict) -> str:
    """The input without its few-shot examples: from the last "Question:"/"Problem:" line on,
    when the input holds several (lm-eval's gsm8k prompts carry five solved examples first)."""
    text = input_of(rec)
    starts = [m.start() for m in _LAST_QUESTION.finditer(text)]
    return text[starts[-1]:] if len(starts) > 1 else text


_QUESTION_MARK = re.compile(r"(?im)^.*?\b(?:question|вопрос|frage|pregunta|domanda|pergunta|q)\s*:\s*")


def explicit_question(rec: dict) -> str:
    """The question when the input marks one ("Question:" …), else its last line if that asks
    something, else "" (a transcript's own questions are not the task's)."""
    text = input_of(rec)
    if _QUESTION_MARK.search(text):
        return question_of(rec)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines and lines[-1].endswith("?") and len(lines) > 1 else ""


def question_of(rec: dict) -> str:
    """The question itself, without the passage or documents before it: the text after the last
    "Question:" (or "Вопрос:", "Frage:", "Pregunta:", "Q:") marker, else the input's last paragraph."""
    return _question(input_of(rec))


@functools.lru_cache(maxsize=64)
def _question(text: str) -> str:
    marks = list(_QUESTION_MARK.finditer(text))
    if marks:
        return text[marks[-1].end():].strip()
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return paragraphs[-1].strip() if paragraphs else ""


def gold_refs(rec: dict) -> list[str]:
    return [str(r.get("text", "")) for r in (rec.get("refs") or []) if r.get("correct") and str(r.get("text", "")).strip()]


def words(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]", text)


def word_count(text: str) -> int:
    return len(re.findall(r"\b\w[\w'’-]*", text))


def shorten(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def norm(text: str) -> str:
    """Case-, punctuation- and space-folded text for containment tests (decimal points kept)."""
    return " ".join(re.sub(r"\.(?!\d)", " ", re.sub(r"[^\w\s.%$-]", " ", text.casefold())).split())


def contains_phrase(haystack: str, phrase: str) -> bool:
    """`phrase` occurs in `haystack` as whole words, ignoring case, punctuation and spacing."""
    p = norm(phrase)
    return bool(p) and re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", norm(haystack)) is not None


STOPWORDS = set(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having he
    her here hers herself him himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself yourselves one two
    three may might must shall also however therefore thus yes""".split()
)


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[^\W\d_][\w'-]*", text.casefold()) if len(w) >= 4 and w not in STOPWORDS]


def stem(word: str) -> str:
    """A crude stem (first 5 letters) so "medications" matches "medication" and "prescribed" "prescribe"."""
    return word[:5] if len(word) > 5 else word


# numbers as people write them: 1,250.50 / -3 / −3 / 0.5 / 12 (a % sign or a currency sign is kept apart)
NUMBER = re.compile(r"(?<![\w.])[-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\w])|(?<![\w.])[-\u2212]?\.\d+(?![\w])")


def to_number(text: str) -> Fraction | None:
    try:
        return Fraction(text.replace(",", "").replace("−", "-"))
    except (ValueError, ZeroDivisionError):
        return None


def numbers_in(text: str) -> list[tuple[Fraction, re.Match]]:
    out = []
    for m in NUMBER.finditer(text):
        v = to_number(m.group(0))
        if v is not None:
            out.append((v, m))
    return out


UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
         "sixteen seventeen eighteen nineteen").split()
TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
SCALES = {"thousand": 1000, "million": 10**6, "billion": 10**9}
NUMBER_WORDS = {w: i for i, w in enumerate(UNITS)} | TENS | SCALES | {"hundred": 100, "dozen": 12}


def english_number(words: list[str]) -> tuple[int, int] | None:
    """(value, words used) of the longest well-formed English number at the start of `words`
    (lower case): "twenty five", "one hundred and five", "two thousand three hundred". "one two"
    is two numbers, and so is "one thirty" (a spoken 130 or 1:30, read by `spoken_values`)."""
    total, current, last, best = 0, 0, None, None
    for i, w in enumerate(words):
        if w in UNITS and last in (None, "tens", "hundred", "scale") and not (last == "tens" and not 0 < UNITS.index(w) < 10):
            current += UNITS.index(w)
            last = "unit"
        elif w in TENS and last in (None, "hundred", "scale"):
            current += TENS[w]
            last = "tens"
        elif w == "hundred" and last in (None, "unit") and current < 10:
            current = max(current, 1) * 100
            last = "hundred"
        elif w in SCALES and last in (None, "unit", "tens", "hundred"):
            total += max(current, 1) * SCALES[w]
            current = 0
            last = "scale"
        elif w == "and" and last in ("hundred", "scale") and i + 1 < len(words) and (words[i + 1] in UNITS or words[i + 1] in TENS):
            continue
        else:
            break
        best = (total + current, i + 1)
    return best


MAX_SPOKEN_DIGITS = 18


def spoken_values(text: str) -> set[Fraction]:
    """Values of numbers said in words, as a transcript writes them: "five" and "a dozen"; "one
    twenty five" (125) and "one thirty over eighty" (130, 80) said digit group by digit group;
    "nineteen ninety nine" (1999); "one oh five" (105); "ninety eight point six" (98.6)."""
    words = re.findall(r"[a-z]+", text.casefold())
    values: set[Fraction] = set()
    i = 0
    while i < len(words):
        groups: list[str] = []  # the digit groups of one spoken run
        j = i
        while j < len(words):
            parsed = english_number(words[j:])
            if parsed:
                groups.append(str(parsed[0]))
                j += parsed[1]
            elif words[j] in ("oh", "o") and groups:
                groups.append("0")
                j += 1
            else:
                break
        if not groups:
            if words[i] == "dozen":
                values.add(Fraction(12))
            elif words[i] == "half":
                values.add(Fraction(1, 2))
            i += 1
            continue
        values |= {Fraction(int(g)) for g in groups}
        # a run of thousands of spoken digits ("one two one two …") is no one number: int() of
        # over 4,300 digits raises, so only runs of MAX_SPOKEN_DIGITS are read as one
        joined = "".join(groups)
        if len(groups) > 1 and len(joined) <= MAX_SPOKEN_DIGITS:
            values.add(Fraction(int(joined)))
        if j + 1 < len(words) and words[j] == "point":
            decimals = english_number(words[j + 1:])
            if decimals:
                values.add(Fraction(f"{groups[-1]}.{decimals[0]}"))
                if len(joined) <= MAX_SPOKEN_DIGITS:
                    values.add(Fraction(f"{joined}.{decimals[0]}"))
        i = j
    return values


def number_values(text: str, spelled: bool = False) -> set[Fraction]:
    """Values of the numbers in `text`; with `spelled`, also of numbers said in words (`spoken_values`)."""
    values = {v for v, _ in numbers_in(text)}
    if spelled:
        values |= spoken_values(text)
    return values


def final_number(text: str) -> tuple[Fraction, str] | None:
    """The answer's final number: after a "####" / "answer is" marker when there is one, else the last."""
    for marker in (r"####\s*", r"(?i)\banswer\s*(?:is|:)\s*\$?", r"(?i)\\boxed\{"):
        found = list(re.finditer(marker, text))
        if found:
            tail = text[found[-1].end():]
            nums = numbers_in(tail)
            if nums:
                return nums[0][0], nums[0][1].group(0)
    nums = numbers_in(text)
    return (nums[-1][0], nums[-1][1].group(0)) if nums else None


_ANSWER_MARK = re.compile(r"####\s*|\banswer\s*(?:is|:)\s*\$?|\\boxed\{", re.I)


def answer_number(out: str) -> tuple[Fraction, re.Match] | None:
    """The number the output gives as its answer — the first after its last answer marker
    ("####", "the answer is", "\\boxed{"), else its only number (several numbers and no marker:
    which one is the answer cannot be told)."""
    marks = list(_ANSWER_MARK.finditer(out))
    if marks:
        nums = [(v, m) for v, m in numbers_in(out) if m.start() >= marks[-1].end()]
        return nums[0] if nums else None
    nums = numbers_in(out)
    return nums[0] if len({v for v, _ in nums}) == 1 else None


def sentences(text: str) -> list[str]:
    """Sentences as they occur in the text (verbatim slices, so they can be quoted); a decimal
    point ("5.9 mmol/L") does not end one."""
    out = []
    for m in re.finditer(r"(?:[^.!?\n]|\.(?=\d))+(?:[.!?]+|\n|$)", text):
        s = m.group(0).strip()
        if word_count(s):
            out.append(s)
    return out


def words_from(text: str, start: int, n: int = 10) -> str | None:
    """The verbatim slice of `text` holding words start … start+n-1 (None past the end)."""
    found = list(re.finditer(r"\b\w[\w'’-]*", text))
    if len(found) <= start:
        return None
    return text[found[start].start():found[min(len(found), start + n) - 1].end()]


# structured answers: "LABEL: value" items and numbers with their units
_ITEM_SPLIT = re.compile(r"\s*(?:\$\$|\n|;|\|)\s*")
_LABELLED = re.compile(r"^\s*([A-Za-z][\w ]{0,20}?)\s*:\s*(.+?)\s*$")
_UNIT_AFTER = re.compile(r"\s*([A-Za-z%$/][A-Za-z/]*)")


def labelled_items(text: str) -> list[tuple[str, str, str]]:
    """("LABEL: value" item verbatim, label, value) for each such item of a structured answer."""
    items = []
    for part in _ITEM_SPLIT.split(text):
        m = _LABELLED.match(part)
        if m and word_count(m.group(2)) <= 8:
            items.append((part.strip(), m.group(1).strip().upper(), m.group(2).strip()))
    return items


def unit_of(text: str, m: re.Match) -> str | None:
    """The unit a number is written with: a "$" before it, else the word after it ("weeks" → "week")."""
    if m.start() > 0 and text[m.start() - 1] == "$":
        return "$"
    after = _UNIT_AFTER.match(text, m.end())
    return after.group(1).casefold().rstrip("s") if after else None


def with_unit(text: str, m: re.Match) -> str:
    """The number with its unit, verbatim ("$12", "50 weeks")."""
    if m.start() > 0 and text[m.start() - 1] == "$":
        return text[m.start() - 1:m.end()]
    after = _UNIT_AFTER.match(text, m.end())
    return text[m.start():m.end() + (len(after.group(0)) if after else 0)].strip()


def by_unit(text: str) -> dict[str, set]:
    units: dict[str, set] = {}
    for v, m in numbers_in(text):
        units.setdefault(unit_of(text, m), set()).add(v)
    return units
