"""Which script and language a text is in, which one the task wants, and the Language Issue
detectors built on them.

The language the output should be in comes, in this order, from: the instructions ("translate …
into Russian", "respond in French", "Russian translation:"), searched in the run's
`instructions` and in the opening and closing 600 characters of the input; else the gold
references (a reference is written in the language the answer should be in); else the task's
question itself. So a translation into Russian of an English text is never "answered in the
wrong language", and an English passage with a Russian question and Russian reference wants a
Russian answer.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher

from .base import (
    Evidence,
    Finding,
    Title,
    gold_refs,
    input_of,
    output_of,
    question_of,
    sentences,
    word_count,
)
from .echo import longest_copied_span
from .normalise import contains_reference
from .shape import without_labels


def _script_of(ch: str) -> str | None:
    if ch.isascii():
        return "LATIN" if ch.isalpha() else None
    if not ch.isalpha():
        return None
    try:
        script = unicodedata.name(ch).split()[0]
    except ValueError:
        return None
    # Japanese kana and Han characters, and the Latin letters with accents, are one script each
    return {"HIRAGANA": "CJK", "KATAKANA": "CJK", "CJK": "CJK"}.get(script, script)


@functools.lru_cache(maxsize=1024)
def _scripts(text: str) -> dict[str, int]:
    """Letters per script (read only: the result is shared)."""
    counts: dict[str, int] = {}
    for ch in text:
        script = _script_of(ch)
        if script:
            counts[script] = counts.get(script, 0) + 1
    return counts


def main_script(text: str, min_letters: int = 20) -> str | None:
    # the first few thousand characters tell the script as well as the whole text does
    return _main_script(text[:3000], min_letters)


@functools.lru_cache(maxsize=1024)
def _main_script(text: str, min_letters: int) -> str | None:
    counts = _scripts(text)
    total = sum(counts.values())
    if total < min_letters:
        return None
    script, n = max(counts.items(), key=lambda kv: kv[1])
    return script if n / total >= 0.8 else None


# the most frequent function words: enough to tell these languages apart in a paragraph
STOPWORDS = {
    "English": {"the", "and", "is", "of", "to", "in", "that", "it", "was", "for", "with", "are", "this", "be", "not"},
    "French": {"le", "la", "les", "et", "est", "des", "une", "du", "que", "pour", "dans", "pas", "sur", "avec", "ce"},
    "German": {"der", "die", "und", "ist", "das", "nicht", "ein", "eine", "zu", "mit", "den", "von", "sich", "auch", "es"},
    "Spanish": {"el", "la", "los", "las", "y", "es", "de", "que", "en", "un", "una", "por", "para", "con", "no"},
    "Italian": {"il", "la", "di", "che", "e", "è", "un", "una", "per", "non", "con", "sono", "del", "della", "gli"},
    "Portuguese": {"o", "a", "os", "as", "e", "é", "de", "que", "em", "um", "uma", "para", "com", "não", "do"},
}

# language name → its script; the Latin-script ones with function words above are told apart too
SCRIPT_OF_LANGUAGE = {
    **dict.fromkeys(["English", "French", "German", "Spanish", "Italian", "Portuguese", "Dutch", "Polish", "Czech",
                     "Turkish", "Swedish", "Danish", "Norwegian", "Finnish", "Romanian", "Hungarian", "Vietnamese",
                     "Indonesian", "Malay", "Swahili", "Catalan", "Croatian", "Slovak", "Slovenian", "Estonian",
                     "Latvian", "Lithuanian", "Tagalog"], "LATIN"),
    **dict.fromkeys(["Russian", "Ukrainian", "Bulgarian", "Serbian", "Belarusian", "Kazakh", "Macedonian"], "CYRILLIC"),
    **dict.fromkeys(["Chinese", "Mandarin", "Cantonese", "Japanese"], "CJK"),
    "Korean": "HANGUL", "Arabic": "ARABIC", "Persian": "ARABIC", "Farsi": "ARABIC", "Urdu": "ARABIC",
    "Hebrew": "HEBREW", "Greek": "GREEK", "Hindi": "DEVANAGARI", "Marathi": "DEVANAGARI", "Nepali": "DEVANAGARI",
    "Thai": "THAI", "Bengali": "BENGALI", "Tamil": "TAMIL", "Telugu": "TELUGU", "Georgian": "GEORGIAN",
    "Armenian": "ARMENIAN", "Amharic": "ETHIOPIC",
}
_LANGS = "|".join(sorted(SCRIPT_OF_LANGUAGE, key=len, reverse=True))
_TARGET = [
    re.compile(rf"\btranslat\w*\b[^\n]{{0,120}}?\b(?:in)?to\s+(?:the\s+)?({_LANGS})\b", re.I),
    re.compile(rf"\b({_LANGS})\s+translation\b", re.I),
    re.compile(rf"\b(?:respond|answer|reply|write|output|response (?:should|must) be|generate)\b[^\n.]{{0,60}}?"
               rf"\bin\s+(?:the\s+)?({_LANGS})\b(?!\s*(?:and|or)\b)", re.I),
    re.compile(rf"\b(?:from\s+\w+\s+)?(?:in)?to\s+({_LANGS})\s*:", re.I),
]
_TRANSLATE = re.compile(r"\btranslat(?:e|ion|ing)\b", re.I)


def language(text: str) -> str | None:
    """The language whose function words dominate a Latin-script text of 20+ words, if clear.
    Letter labels ("A: purple", "(B)", "c)") are not words: "A: purple, B: white, C: red" is
    not Portuguese."""
    words = re.findall(r"[^\W\d_]+", without_labels(text).lower())
    if len(words) < 20:
        return None
    scores = {lang: sum(w in stop for w in words) / len(words) for lang, stop in STOPWORDS.items()}
    ranked = sorted(scores.items(), key=lambda kv: kv[1], reverse=True)
    (best, top), (_, second) = ranked[0], ranked[1]
    return best if top >= 0.12 and top >= 1.5 * second else None


def _instruction_text(rec: dict) -> str:
    text = input_of(rec)
    head_tail = text if len(text) <= 1200 else text[:600] + "\n" + text[-600:]
    return "\n".join(t for t in (rec.get("instructions"), head_tail) if t)


def target_language(rec: dict) -> str | None:
    """The language the instructions ask the output to be in, by name ("Russian"), if they say."""
    text = _instruction_text(rec)
    for rx in _TARGET:
        m = rx.search(text)
        if m:
            return next(name for name in SCRIPT_OF_LANGUAGE if name.casefold() == m.group(1).casefold())
    return None


def is_translation(rec: dict) -> bool:
    return bool(_TRANSLATE.search(_instruction_text(rec))) and target_language(rec) is not None


@dataclass(frozen=True)
class Expected:
    script: str | None
    language: str | None  # one of STOPWORDS' languages, when known
    source: str  # "instructions", "reference" or "question"


def expected(rec: dict) -> Expected:
    """The script (and, for six Latin-script languages, the language) the output should be in."""
    target = target_language(rec)
    if target:
        return Expected(SCRIPT_OF_LANGUAGE[target], target if target in STOPWORDS else None, "instructions")
    refs = " ".join(gold_refs(rec))
    script = main_script(refs, min_letters=4)
    if script:
        return Expected(script, language(refs) if script == "LATIN" else None, "reference")
    question = question_of(rec)[-1500:]
    script = main_script(question, min_letters=10)
    return Expected(script, language(question) if script == "LATIN" else None, "question")


def _first_sentence(text: str) -> str | None:
    found = sentences(text)
    return found[0] if found else None


WRONG_LANGUAGE = Title("Answers in the wrong language or script", "Language Issue")


def detect_wrong_script(rec: dict) -> Finding | None:
    output = output_of(rec)
    want = expected(rec)
    got = main_script(output, min_letters=4 if want.source != "question" else 20)
    quote = _first_sentence(output)
    why = {"instructions": "the instructions ask for", "reference": "the reference is in",
           "question": "the task is written in"}[want.source]
    if want.script and got and want.script != got:
        if is_translation(rec) and not _copies_source(rec):
            return _answered_instead(rec, quote)
        return WRONG_LANGUAGE.finding(
            "wrong_script",
            f"{why[:1].upper()}{why[1:]} {want.language or want.script.title() + ' script'} but the model answered "
            f"in {got.title()} script.",
            (Evidence("Answers in the language of the task", quote),),
        )
    if want.script == got == "LATIN" and want.language:
        got_lang = language(output)
        mentioned = want.source != "instructions" and re.search(got_lang or "^$", _instruction_text(rec), re.I)
        if got_lang and got_lang != want.language and not mentioned:
            if is_translation(rec) and not _copies_source(rec):
                return _answered_instead(rec, quote)
            return WRONG_LANGUAGE.finding(
                "wrong_language",
                f"{why[:1].upper()}{why[1:]} {want.language} but the model answered in {got_lang}.",
                (Evidence("Answers in the language of the task", quote),),
            )
    return None


def _copies_source(rec: dict) -> bool:
    """The output repeats the text it was to translate (8+ words copied, or all of a short one)."""
    out, source = output_of(rec), input_of(rec)
    span = longest_copied_span(out, source)
    return span is not None or (word_count(out) < 8 and out.strip().casefold() in source.casefold())


ANSWERS_INSTEAD_OF_TRANSLATING = Title("Answers the text instead of translating it", "Irrelevant/Off-Topic")


def _answered_instead(rec: dict, quote: str | None) -> Finding:
    return ANSWERS_INSTEAD_OF_TRANSLATING.finding(
        "answers_instead_of_translating",
        f"Asked to translate into {target_language(rec)}, the model replied to the text in another language instead: "
        f"\"{(quote or '')[:80]}\".",
        (Evidence(f"Translates the text into {target_language(rec)}", quote),),
    )


# a word that is code or a formula: joined to a call, an attribute, an index or an operator
_CODE_CONTEXT = re.compile(r"(?=.*(?:[._(\[^=`\\]|\d))[\w.()\[\]^=`\\/*+\-]+")


_CYRILLIC = dict(zip("abcdefghijklmnopqrstuvwxyz", "абкдефгхийклмнопкрстуввхйз"))


def _spells_a_reference_word(word: str, refs: str) -> bool:
    """A Latin word that, letter for letter in Cyrillic, is close to a word of the reference
    ("Leonardo" for "Леонардо"): the reference's own name left untransliterated."""
    cyrillic = "".join(_CYRILLIC.get(c, c) for c in word.casefold())
    return any(SequenceMatcher(None, cyrillic, w.casefold()).ratio() >= 0.7 for w in re.findall(r"\w{3,}", refs))


def _kept_in_latin(output: str, m: re.Match, given: str, refs: str) -> bool:
    """A word rightly written in its own script inside another: a name (capitalised: Microsoft,
    Marcel Proust), code or a formula (my_list.size(), sin(x)^2), or a term the prompt itself
    writes that way — unless it is the reference's own word left untransliterated."""
    start = output.rfind(" ", 0, m.start()) + 1
    end = output.find(" ", m.end())
    token = output[start:end if end >= 0 else len(output)].strip(",;:!?»«\"'")
    if _spells_a_reference_word(m.group(0), refs):
        return False
    code = token != m.group(0) and bool(_CODE_CONTEXT.fullmatch(token))
    return m.group(0)[0].isupper() or code or m.group(0).casefold() in given


def _foreign_words(output: str, script: str, refs: str, given: str = "") -> list[str]:
    """Words of 3+ letters in another script than `script`: not acronyms, words the reference
    uses, names, code, formulas or terms the prompt writes in that script (`given`, case-folded)."""
    found = []
    for m in re.finditer(r"[^\W\d_]{3,}", output):
        word = m.group(0)
        scripts = {_script_of(c) for c in word} - {None}
        if scripts == {script} or len(scripts) != 1:
            continue
        if word.isupper() and len(word) <= 5 or word.casefold() in refs.casefold() or _kept_in_latin(output, m, given, refs):
            continue
        found.append(word)
    return found


MIXED_SCRIPT = Title("Leaves words in another language or script", "Language Issue")


def detect_mixed_script(rec: dict) -> Finding | None:
    """An answer mostly in the right script that leaves words in another one (an untranslated
    term, a name left in English in a Russian answer) where the instructions or the reference set
    the script."""
    output = output_of(rec)
    want = expected(rec)
    counts = _scripts(output[:3000])
    if want.source == "question" or not want.script or not counts or max(counts, key=counts.get) != want.script:
        return None
    if contains_reference(rec):
        return None  # the answer is there in the right script: a stray foreign word is not why it failed
    foreign = _foreign_words(output, want.script, " ".join(gold_refs(rec)), input_of(rec).casefold())
    if not foreign:
        return None
    other = _script_of(foreign[0][0]).title()
    shown = ", ".join(f"\"{w}\"" for w in list(dict.fromkeys(foreign))[:3])
    return MIXED_SCRIPT.finding(
        "mixed_script",
        f"The answer is in {want.script.title()} script as {('the instructions ask' if want.source == 'instructions' else 'the reference is')}, "
        f"but writes {shown} in {other} script.",
        tuple(Evidence(f"Writes every word in {want.script.title()} script", w) for w in list(dict.fromkeys(foreign))[:3]),
    )


TRANSLATION_OMISSION = Title("Translation leaves out part of the source", "Incomplete Content")
INACCURATE_TRANSLATION = Title("Translation judged inaccurate", "Language Issue")


def detect_translation_quality(rec: dict) -> Finding | None:
    """A translation in the language asked for that was still judged wrong. Under 60% of the
    reference's length (a reference of 6+ words), part of the source is left out; otherwise, with
    no leftover source words or other visible slip, the error is in the translation itself (word
    choice or meaning), which only a reader of both languages can pin down."""
    if not is_translation(rec):
        return None
    output = output_of(rec)
    target = target_language(rec)
    got = main_script(output, min_letters=4)
    if not output.strip() or (got is not None and got != SCRIPT_OF_LANGUAGE[target]):
        return None
    quote = _first_sentence(output)
    shortest = min((word_count(r) for r in gold_refs(rec)), default=0)
    if shortest >= 6 and word_count(output) < 0.6 * shortest:
        return TRANSLATION_OMISSION.finding(
            "translation_omission",
            f"The {target} translation has {word_count(output)} words where the reference has {shortest}: part of the "
            f"source is not translated.",
            (Evidence(f"Translates all of the source into {target}", quote),),
        )
    return INACCURATE_TRANSLATION.finding(
        "translation_quality",
        f"The output is a {target} translation, as asked, but was scored a failure; no omission, untranslated word or "
        f"format problem is visible, so the error is in its wording or meaning.",
        (Evidence(f"Translates the source accurately into {target}", quote),),
    )
