"""Text normalisation for comparing an output with a reference the way a person would: two
texts that say the same thing in another form come out as the same tokens.

`normalise` runs these steps in order and records which of them changed the text:

- Unicode: compatibility forms folded, accents and other combining marks dropped ("ё" = "е",
  "é" = "e"), Greek letters spelled out ("TNF-α" = "TNF-alpha");
- the minus sign's form: "−12" (the Unicode minus) and "–12" (a dash before a number that does
  not follow a word or a number) are "-12";
- case;
- date format: "12 March 1999", "March 12th, 1999", "1999-03-12", "12.03.1999" (day or month
  above 12 decides the order of a slashed date, dots mean day.month.year; otherwise the numeric
  form is left alone) and month names in English, French, German, Spanish, Italian, Portuguese
  and Russian become one form;
- number format: thousands separators, trailing zeros ("40.00" = "40"), ordinals ("3rd" = "3"),
  "%" = "percent";
- punctuation (a hyphen is a space, but a number's sign is kept: "-3960" is never "3960", and
  "(-12)" is "-12");
- number words: English compounds ("twenty-five", "one hundred and five") and the small numbers
  of the other languages above ("trois", "drei", "три") become digits;
- articles (English, French, German, Spanish, Italian, Portuguese);
Nothing here changes a number's value or sign, a negation ("not", "no", "never" are words like
any other), or a unit (units are words: "5 km" is never "5 miles"). Then `same_form` compares
tokens:

- word forms, token by token: English plural and verb endings ("studies" = "study", "used" =
  "use"); in other scripts, a shared stem of 4+ letters with endings of at most 2 ("Москва" =
  "Москве", "Пушкин" = "Пушкиным"); `find_span` also finds a run of words split differently
  ("covid 19" in "covid19") and an acronym of 2–6 letters for the words it stands for ("USA" for
  "United States of America").
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from .base import english_number, gold_refs, output_of

_GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
          "θ": "theta", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "π": "pi", "ρ": "rho", "σ": "sigma",
          "τ": "tau", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega"}

# month names by number, as they read once accents are dropped and case folded; Russian by stem
# (its months inflect: "марта", "мае"), the others in full and in their common abbreviations
_MONTHS = [
    r"january|jan|janvier|januar|enero|gennaio|janeiro|январ\w*",
    r"february|feb|fevrier|februar|febrero|febbraio|fevereiro|феврал\w*",
    r"march|mar|mars|marz|marzo|marco|март\w*",
    r"april|apr|avril|abril|aprile|апрел\w*",
    r"may|mai|mayo|maggio|maio|ма[ияе]",
    r"june|jun|juin|juni|junio|giugno|junho|июн\w*",
    r"july|jul|juillet|juli|julio|luglio|julho|июл\w*",
    r"august|aug|aout|agosto|август\w*",
    r"september|sept|sep|septembre|septiembre|settembre|setembro|сентябр\w*",
    r"october|oct|octobre|oktober|octubre|ottobre|outubro|октябр\w*",
    r"november|nov|novembre|noviembre|novembro|ноябр\w*",
    r"december|dec|decembre|dezember|diciembre|dicembre|dezembro|декабр\w*",
]
_MONTH = "|".join(f"(?P<m{i + 1}>{p})" for i, p in enumerate(_MONTHS))
_YEAR_WORD = r"(?:\s*(?:года|год|г)\b\.?)?"
_DATES = [
    re.compile(rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th|er)?\.?\s+(?:of\s+|de\s+)?(?:{_MONTH})\.?,?\s+(?:de\s+)?(?P<y>\d{{4}}){_YEAR_WORD}"),
    re.compile(rf"\b(?:{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>\d{{4}}){_YEAR_WORD}"),
    re.compile(rf"\b(?:{_MONTH})\.?,?\s+(?:of\s+|de\s+)?(?P<y>\d{{4}}){_YEAR_WORD}"),
    re.compile(r"\b(?P<y>\d{4})-(?P<mm>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(r"\b(?P<d>\d{1,2})\.(?P<mm>\d{1,2})\.(?P<y>\d{4})\b"),  # dots: day.month.year
    re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<y>\d{4})\b"),
]

_ORDINALS = {w: i + 1 for i, w in enumerate(
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split())}
# the small numbers of the other languages (accents dropped, case folded); words that are also
# articles or common words elsewhere ("un", "due", "tres", "sei", "sept") are left out
_FOREIGN_NUMBERS = {
    **dict.fromkeys(["deux", "zwei", "dois", "duas", "два", "две"], 2),
    **dict.fromkeys(["trois", "drei", "три"], 3),
    **dict.fromkeys(["quatre", "cuatro", "quattro", "quatro", "четыре"], 4),
    **dict.fromkeys(["cinq", "cinco", "cinque", "funf", "пять"], 5),
    **dict.fromkeys(["sechs", "шесть"], 6),
    **dict.fromkeys(["siete", "sette", "sieben", "семь"], 7),
    **dict.fromkeys(["huit", "ocho", "oito", "восемь"], 8),
    **dict.fromkeys(["neuf", "nueve", "neun", "девять"], 9),
    **dict.fromkeys(["dix", "diez", "dieci", "zehn", "десять"], 10),
    **dict.fromkeys(["один", "одна", "одно"], 1),
}
_ARTICLES = frozenset("""a an the le la les l un une des du de der die das den dem des ein eine einen einem
    einer el los las lo uno una il gli i o os as um uma""".split())
NEGATION = frozenset("not no never neither nor none cannot n't ne pas nicht kein keine nein не нет ни no".split())


@dataclass(frozen=True)
class Text:
    """A text through the normalisation steps: its tokens, and which steps changed it."""

    tokens: tuple[str, ...]
    changed: frozenset[str]


def _unicode(text: str) -> str:
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    return "".join(_GREEK.get(c, c) for c in text)


def _date_token(m: re.Match) -> str | None:
    y = int(m.group("y"))
    month = next((int(k[1:]) for k, v in m.groupdict().items() if k.startswith("m") and k[1:].isdigit() and v), None)
    d = m.groupdict().get("d")
    if m.groupdict().get("mm"):
        month = int(m.group("mm"))
    if m.groupdict().get("a"):
        a, b = int(m.group("a")), int(m.group("b"))
        if a > 12 and b <= 12:
            d, month = a, b
        elif b > 12 and a <= 12:
            d, month = b, a
        else:
            return None  # 03/04/1999 could be either: leave it as written
    if not month or not 1 <= month <= 12 or not 1000 <= y <= 2999:
        return None
    if d is not None and not 1 <= int(d) <= 31:
        return None
    return f" {y} {month:02d}" + (f" {int(d):02d} " if d is not None else " ")


# a dash or Unicode minus before a number, not after a word, a number or a closing bracket
_MINUS = re.compile(r"(?<![\w.)\]])[\u2212\u2013\u2014](?=\.?\d)|\u2212")


def _minus(text: str) -> str:
    return _MINUS.sub("-", text)


def _dates(text: str) -> str:
    for rx in _DATES:
        text = rx.sub(lambda m: _date_token(m) or m.group(0), text)
    return text


def _number_format(text: str) -> str:
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d)\.0+\b", "", text)
    text = re.sub(r"(\d\.\d*?[1-9])0+\b", r"\1", text)
    text = re.sub(r"\b(\d+)(?:st|nd|rd|th)\b", r"\1", text)
    return re.sub(r"(?<=\d)\s*%", " percent", text)


# a minus sign: "-" before a number, not after a word, a number or a closing bracket ("3-4" and
# "covid-19" are separators)
_SIGN = re.compile(r"(?<![\w.)\]])-(?=\.?\d)")


def _punctuation(text: str) -> str:
    # keep a decimal point between digits and a number's sign; every other non-word character
    # separates words
    text = _SIGN.sub("\x00", text)
    text = re.sub(r"(?!(?<=\d)\.(?=\d))[^\w\x00]|_", " ", text)
    return " ".join(text.replace("\x00", "-").split())


def _number_words(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        parsed = english_number(tokens[i:])
        if parsed:
            out.append(str(parsed[0]))
            i += parsed[1]
            continue
        out.append(str(_ORDINALS.get(t, _FOREIGN_NUMBERS.get(t, t))))
        i += 1
    return out


@functools.lru_cache(maxsize=256)  # the same inputs and references recur across models and detectors
def normalise(text: str) -> Text:
    """The text's tokens after every step, and the names of the steps that changed it."""
    changed: set[str] = set()

    def step(name: str, before, after):
        if after != before:
            changed.add(name)
        return after

    s = step("Unicode", text, _unicode(text))
    s = step("the minus sign's form", s, _minus(s))
    s = step("case", s, s.casefold())
    s = step("date format", s, _dates(s))
    s = step("number format", s, _number_format(s))
    plain = _punctuation(s)
    if plain.split() != s.split():
        changed.add("punctuation")
    tokens = step("number words", plain.split(), _number_words(plain.split()))
    kept = [t for t in tokens if t not in _ARTICLES]
    if kept and len(kept) != len(tokens):
        changed.add("articles")
        tokens = kept
    return Text(tuple(tokens), frozenset(changed))


@functools.lru_cache(maxsize=65536)
def _english_forms(w: str) -> frozenset[str]:
    """The word and its stem without an English plural or verb ending ("used" → "us", "use")."""
    forms = {w}
    if w.endswith("ies") and len(w) > 4:
        forms.add(w[:-3] + "y")
    for suffix, min_len in (("ing", 6), ("ed", 4), ("es", 4), ("s", 4)):
        if w.endswith(suffix) and len(w) >= min_len and not w.endswith("ss"):
            stem = w[: -len(suffix)]
            forms |= {stem, stem + "e"} if suffix != "s" else {stem}
    return frozenset(f for f in forms if len(f) >= 3)


@functools.lru_cache(maxsize=262144)
def same_form(a: str, b: str) -> bool:
    """Two tokens that are forms of one word (numbers must be equal)."""
    if a == b:
        return True
    if any(c.isdigit() for c in a + b):
        return False
    if a.isascii() and b.isascii():
        return bool(_english_forms(a) & _english_forms(b))
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    return p >= 4 and len(a) - p <= 2 and len(b) - p <= 2


def _joined(tokens: list[str]) -> str:
    """The tokens run together, except that two numbers stay apart ("1 2" is not "12")."""
    out = ""
    for t in tokens:
        out += ("|" if out and out[-1].isdigit() and t[:1].isdigit() else "") + t
    return out


def tokens_equal(a: list[str], b: list[str]) -> bool:
    """The same words (word forms allowed), or the same letters split differently."""
    if not a or not b:
        return False
    return (len(a) == len(b) and all(same_form(x, y) for x, y in zip(a, b))) or _joined(a) == _joined(b)


def find_span(needle: list[str], hay: list[str]) -> int | None:
    """Where `needle` starts in `hay` (see `match_span`), if it occurs."""
    span = match_span(needle, hay)
    return span[0] if span else None


def match_span(needle: list[str], hay: list[str]) -> tuple[int, int] | None:
    """The tokens [start, end) of `hay` that say `needle`: the same run of tokens (word forms
    allowed), the same letters split differently ("covid 19" in "covid19", "e mail" in
    "email"), or an acronym for it either way round."""
    n = len(needle)
    for i in range(len(hay) - n + 1):
        if all(same_form(x, y) for x, y in zip(needle, hay[i:i + n])):
            return i, i + n
    joined = _joined(needle)
    for i in range(len(hay)):
        if not joined.startswith(hay[i]):
            continue
        run = ""
        for j in range(i, len(hay)):
            run += ("|" if run and run[-1].isdigit() and hay[j][:1].isdigit() else "") + hay[j]
            if len(run) >= len(joined):
                if run == joined:
                    return i, j + 1
                break
    return _acronym_span(needle, hay)


_NOT_INITIALS = frozenset("of and for in on at to de la le du des der die das del y и".split())


def _initials(tokens: list[str]) -> str:
    return "".join(t[0] for t in tokens if t not in _NOT_INITIALS and not t[0].isdigit())


def _acronym_span(needle: list[str], hay: list[str]) -> tuple[int, int] | None:
    """An acronym for the other side's words: "usa" for "united states of america", "who" for
    "world health organization" (2–6 letters, either way round)."""
    if len(needle) >= 2:
        short = _initials(needle)
        if 2 <= len(short) <= 6 and short in hay:
            return hay.index(short), hay.index(short) + 1
    elif len(needle) == 1 and 2 <= len(needle[0]) <= 6 and needle[0].isalpha():
        n = len(needle[0])
        for i in range(len(hay)):
            for j in range(i + n, min(len(hay), i + 2 * n + 2) + 1):
                if _initials(hay[i:j]) == needle[0] and hay[i] not in _NOT_INITIALS and hay[j - 1] not in _NOT_INITIALS:
                    return i, j
    return None


_MARKED = [
    re.compile(r"\\boxed\{([^{}]*)\}"),
    re.compile(r"\\emph\{([^{}]*)\}"),
    re.compile(r"####\s*([^\n]+)"),
    # a dash after the marker is punctuation, unless it is a number's sign ("answer is -4140")
    re.compile(r"(?i)\b(?:final answer|the answer is|answer)\s*(?:is|:)?\s*(?::|-(?!\d))?\s*([^\n]+?)\s*(?:\.(?:\s|$)|\n|$)"),
]


def marked_answer(text: str) -> str | None:
    """The answer the output marks as final: `\\boxed{}`, `\\emph{}`, after `####` or "the answer is"."""
    for rx in _MARKED:
        found = list(rx.finditer(text))
        if found:
            return found[-1].group(1).strip()
    return None


ITEMS = re.compile(r"\s*(?:[,;\n]|\band\b|\bet\b|\bund\b|\by\b|\bи\b)\s*(?:[-*•]|\d+[.)])?\s*", re.I)


def list_items(text: str) -> list[tuple[str, ...]] | None:
    parts = [p for p in ITEMS.split(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", text.strip())) if p and p.strip(" .")]
    if len(parts) < 2:
        return None
    return sorted(tuple(normalise(p).tokens) for p in parts)


def contains_reference(rec: dict) -> bool:
    """Whether a gold reference occurs in the output once both are normalised."""
    said = normalise(output_of(rec)).tokens
    return any(t and find_span(t, said) is not None for t in (normalise(r).tokens for r in gold_refs(rec)))
