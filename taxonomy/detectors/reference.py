"""The output measured against the gold references: No Model Error when they say the same
thing, and the errors a reference comparison shows (a partial answer, a false "the text does
not say").

No Model Error — a failure whose output provably says what a gold reference says (the same
value, the same words once both are normalised: `taxonomy.detectors.normalise`, which never
changes a number's value or sign, a negation or a unit) is the scoring's problem, not the
model's; the reason names both strings. What counts as a match depends on how the failure was
scored (its metric's name, or judge notes):

- the whole output, or its marked final answer (`\\boxed{}`, `\\emph{}`, `####`, "the answer
  is …"), equals a reference or the reference's own marked answer (a worked reference solution
  ending "#### 72") — for every metric: an output that says exactly what the reference says is
  not wrong, whoever judged it;
- the same set of list items in another order — for every metric but a judge's, and never where
  the task asks for an order (sort, rank, arrange);
- a match metric (exact / quasi-exact / substring / accuracy, or none named): a reference that is
  one number is matched by the number the output gives as its answer, of the same value and
  (when both name one) the same unit — and digits of another value are never matched by any
  other rule; the output's first line equals the reference and its final answer does not say
  otherwise; or the reference occurs in the output as a run of words, never next to a negation
  or an "or", when the metric is a substring check or the output is short (at most 30 words)
  and every new word (not the question's) says the reference ("The capital is Paris" for
  "Paris", not "John's brother Peter" for "John", not "oak, birch, pine, ash" for "oak, birch,
  pine").

A judge's verdict is overruled only by the first rule: measured on held-out failures, letting a
judge be overruled when a short answer contains the reference added wrong No Model Errors and
found no right ones.

Never matched: code (punctuation is its syntax), an output that breaks a form the prompt sets
(all lowercase, no commas, "start with …": the difference is then the error itself), or one with
chat-template tokens the prompt does not show (the metric rightly read them). Multiple
choice is matched by its options instead: an output that names the gold option (by key, key and
text, or text) in a form the metric did not read ("Answer: d) Dowry death") is not the model's
error; an answer naming several options names none. A blank output never matches.

No Model Error too, when the model was not given the answer: the documents before the question
(40+ words) hold no gold reference that is a name (`detect_retrieval_miss`), or the model says
so itself (`detect_no_answer_claim`, which calls the same claim a Refusal when the reference is
there).
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..catalog import NO_ERROR
from .base import (
    PART_OF_ANSWER,
    STOPWORDS,
    Evidence,
    Finding,
    Look,
    Title,
    answer_number,
    gold_refs,
    input_of,
    labelled_items,
    numbers_in,
    output_of,
    question_of,
    sentences,
    shorten,
    task_of,
    unit_of,
    word_count,
)
from .choice import chosen_option, gold_option, is_multiple_choice, options
from .constraints import violations
from .language import main_script
from .normalise import (
    ITEMS,
    NEGATION,
    Text,
    find_span,
    list_items,
    marked_answer,
    match_span,
    normalise,
    same_form,
    tokens_equal,
)
from .shape import TEMPLATE_TOKEN, asks_for_order


def metric_kind(rec: dict) -> str:
    """How the failure was scored: 'judge' (an LLM or a jury), 'overlap' (F1, ROUGE, BLEU…) or 'match'."""
    metric = (rec.get("main_metric") or "").casefold()
    if rec.get("judge_notes") or re.search(r"judge|jury|llm|rubric|model.?graded|annotat|gpt|claude|preference", metric):
        return "judge"
    if re.search(r"f1|rouge|bleu|meteor|chrf|\bter\b|bert|comet|similar", metric):
        return "overlap"
    return "match"


def _substring_metric(rec: dict) -> bool:
    return bool(re.search(r"substring|contain|includ", (rec.get("main_metric") or "").casefold()))


def _negated_or_hedged(tokens: list[str], at: int, n: int) -> bool:
    window = tokens[max(0, at - 3):at] + tokens[at + n:at + n + 2]
    return any(t in NEGATION or t in ("or", "ou", "oder", "o", "или") for t in window)


_ONE_NUMBER = re.compile(r"\s*[$€£]?\s*[-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*(?:%|[^\W\d_]+\.?)?\s*")


def _numeric_ref(ref: str) -> tuple[Fraction, str | None] | None:
    """(value, unit) of a reference that is one number (a currency sign or one unit word around
    it allowed: "$12", "5 km", "10%"); not a date ("12.04.1961") or a range."""
    if not _ONE_NUMBER.fullmatch(ref):
        return None
    nums = numbers_in(ref)
    return (nums[0][0], _unit(ref, nums[0][1])) if len(nums) == 1 else None


def _unit(text: str, m: re.Match) -> str | None:
    unit = unit_of(text, m)
    return "percent" if unit in ("%", "percent", "per") else unit


def _how(*texts: Text) -> str:
    """The normalisation steps that changed either text."""
    order = ["Unicode", "the minus sign's form", "case", "date format", "number format", "punctuation", "number words",
             "articles"]
    return ", ".join(s for s in order if any(s in t.changed for t in texts))


_CODE = re.compile(r"```|^\s*(?:def|class|import|from\s+\S+\s+import|function|public|private|#include|return|SELECT|var|let|const)\b|"
                   r"[{};]\s*$|==|=>|\)\s*:", re.M)


def _template_tokens(rec: dict) -> list[str]:
    """Chat-template tokens in the output that the prompt does not show."""
    prompt = "\n".join([input_of(rec), rec.get("prompt_text") or "", rec.get("instructions") or ""] + gold_refs(rec))
    return [m.group(0) for m in TEMPLATE_TOKEN.finditer(output_of(rec)) if m.group(0) not in prompt]


def _percent_of(value: Fraction, unit: str | None, ref: tuple[Fraction, str | None]) -> bool:
    """One number is the other written as a percent: "45%" for the reference 0.45, 0.45 for 45%."""
    if unit == "percent" and ref[1] is None:
        return value / 100 == ref[0]
    return unit is None and ref[1] == "percent" and value * 100 == ref[0]


def _contradicts(out: str, ref: Text, ref_number: tuple[Fraction, str | None] | None) -> bool:
    """The output's own final answer says something else than the reference: a marked answer
    that is not it, or (for a numeric reference) an answer number of another value."""
    marked = marked_answer(out)
    if marked and not tokens_equal(ref.tokens, normalise(marked).tokens):
        got = answer_number(out)
        if ref_number is None or got is None or got[0] != ref_number[0]:
            return True
    got = answer_number(out)
    return ref_number is not None and got is not None and got[0] != ref_number[0]


def match_reference(rec: dict) -> tuple[str, str, str] | None:
    """(the reference matched, the output's words that say it, the normalisation steps that
    changed either) — or None unless the output provably says what a reference says. Code
    (where punctuation is syntax), outputs that break a form the prompt sets (case, commas, a
    phrase to start with: the difference is then the error) and outputs with chat-template
    tokens (which a metric rightly reads) are never matched."""
    out = output_of(rec)
    if not out.strip() or is_multiple_choice(rec):
        return None
    if _CODE.search(out) or any(_CODE.search(r) for r in gold_refs(rec)) or violations(task_of(rec), out):
        return None
    if _template_tokens(rec):
        return None
    kind = metric_kind(rec)
    whole = normalise(out)
    marked = marked_answer(out)
    first_line = out.strip().splitlines()[0]
    question = normalise(question_of(rec)).tokens
    ordered = asks_for_order(rec)
    for ref in gold_refs(rec):
        r = normalise(ref)
        if not r.tokens:
            continue
        if tokens_equal(r.tokens, whole.tokens):
            return ref, out.strip(), _how(r, whole)
        ref_marked = marked_answer(ref)
        if marked:
            m = normalise(marked)
            for target in filter(None, (r, ref_marked and normalise(ref_marked))):
                if tokens_equal(target.tokens, m.tokens):
                    return ref, marked, _how(target, m) or "the words around the marked answer"
        if kind != "judge" and not ordered:
            ref_items, out_items = list_items(ref), list_items(out)
            if ref_items and ref_items == out_items:
                return ref, out.strip(), "the order of the list items"
        if kind != "match":
            continue
        ref_number = _numeric_ref(ref_marked or ref)
        if ref_number is not None:
            got = answer_number(out)
            unit = got and _unit(out, got[1])
            if got is not None and got[0] == ref_number[0] and (ref_number[1] is None or unit in (None, "$", ref_number[1])) \
                    and not _contradicts(out, r, ref_number):
                return ref, got[1].group(0), "the words around the number"
            if got is not None and _percent_of(got[0], unit, ref_number) and not _contradicts(out, r, (got[0], unit)):
                return ref, got[1].group(0), "a share written as a percent or as a fraction"
            if got is not None or numbers_in(out):
                continue  # a number is its value: digits of another value are never the reference's
        if _contradicts(out, r, None):
            continue
        line = normalise(first_line)
        if first_line.strip() != out.strip() and tokens_equal(r.tokens, line.tokens):
            return ref, first_line.strip(), _how(r, line) or "the explanation after the answer"
        span = match_span(r.tokens, whole.tokens)
        if span is None or _negated_or_hedged(whole.tokens, span[0], span[1] - span[0]):
            continue
        if _substring_metric(rec) or _only_the_answer(span, whole.tokens, question):
            return ref, _quote_span(out, r.tokens), _how(r, whole) or "the words around it"
    return None


def _only_the_answer(span: tuple[int, int], out: list[str], question: list[str]) -> bool:
    """A short output (at most 30 words) every new content word of which (not the question's) is
    one of those that say the reference: "The capital is Paris", not "John's brother Peter" for
    "John", nor "Paris and Lyon" for "Paris", nor "oak, birch, pine, ash" for "oak, birch, pine"."""
    if len(out) > 30:
        return False
    new = [i for i, t in enumerate(out) if t not in STOPWORDS and not any(same_form(t, q) for q in question)]
    return bool(new) and all(span[0] <= i < span[1] for i in new)


def _quote_span(out: str, ref_tokens: list[str]) -> str:
    """The shortest verbatim stretch of the output whose normalised words contain the reference."""
    words = list(re.finditer(r"\S+", out))
    for size in range(1, len(words) + 1):
        for i in range(len(words) - size + 1):
            piece = out[words[i].start():words[i + size - 1].end()]
            if find_span(ref_tokens, normalise(piece).tokens) is not None:
                return piece.strip(" ,;:")
    return out.strip()


CORRECT_OPTION_UNREAD = Title("Chooses the correct option in a form the metric did not read", NO_ERROR)


def _chose_the_gold(rec: dict) -> Finding | None:
    """Multiple choice where the output names the gold option, and only it, in a form the metric
    did not read ("Answer: d) Dowry death" against "d) Dowry death"). Chat-template tokens around
    it are the error itself (Formatting Error), so such an output is never matched."""
    key, gold = chosen_option(rec), gold_option(rec)
    if key is None or key != gold or _template_tokens(rec):
        return None
    text = shorten(str(options(rec)[key]), 60)
    out = output_of(rec).strip()
    return CORRECT_OPTION_UNREAD.finding(
        "reference_match",
        f"The answer \"{shorten(out, 60)}\" names option {key} (\"{text}\"), the correct one; the failure is the "
        f"scoring's reading of its form, not the model's choice.",
        (Evidence(f"Picks the correct option {key}", out if len(out) <= 200 else None),),
        no_model_error=f"the output \"{shorten(out, 60)}\" names the correct option {key} (\"{text}\"); "
                       f"{rec.get('main_metric') or 'the metric'} did not read it",
    )


def near_miss(rec: dict) -> Look | None:
    """A numeric answer that is not the reference's number: what differs (the sign, the value, the
    unit), so that the analysis can say why it did not call them the same."""
    got = answer_number(output_of(rec))
    if got is None:
        return None
    for ref in gold_refs(rec):
        want = _numeric_ref(marked_answer(ref) or ref)
        if want is None:
            continue
        if got[0] == want[0]:
            unit = _unit(output_of(rec), got[1])
            if want[1] is not None and unit not in (None, "$", want[1]):
                return Look("reference match", f"the answer \"{got[1].group(0)} {unit}\" is not the reference "
                                               f"\"{ref.strip()}\": another unit")
            continue
        what = "in sign" if got[0] == -want[0] else "in value"
        return Look("reference match", f"the answer \"{got[1].group(0)}\" is not the reference \"{ref.strip()}\": "
                                       f"they differ {what}")
    return None


MATCHES_REFERENCE = Title("Matches the reference once normalised", NO_ERROR)


def detect_reference_match(rec: dict) -> Finding | Look | None:
    if output_of(rec).strip() and is_multiple_choice(rec):
        return _chose_the_gold(rec)
    found = match_reference(rec)
    if found is None:
        return near_miss(rec)
    ref, quote, how = found
    metric = rec.get("main_metric") or "the metric"
    if how:
        reason = (f"the output's answer \"{shorten(quote, 60)}\" is the reference \"{shorten(ref, 60)}\" once "
                  f"normalised ({how}); {metric} scored it as a failure")
        summary = (f"The answer \"{shorten(quote, 60)}\" says what the reference \"{shorten(ref, 60)}\" says; they "
                   f"differ only in {how}, so the failure is the scoring's, not the model's.")
    else:  # the output is the reference's text as it stands: the metric read something else
        reason = (f"the output \"{shorten(quote, 60)}\" is the reference \"{shorten(ref, 60)}\" as written; "
                  f"{metric} scored it as a failure")
        summary = (f"The output \"{shorten(quote, 60)}\" is the reference's own text, so the failure is the "
                   f"scoring's, not the model's.")
    return MATCHES_REFERENCE.finding(
        "reference_match",
        summary,
        (Evidence(f"Says what the reference says (\"{shorten(ref, 60)}\")", quote if quote in output_of(rec) else None),),
        no_model_error=reason,
    )


# an answer that says the input does not hold the answer ("the passage does not say", "нет сведений")
_NO_ANSWER = re.compile(
    r"\b(?:does not|doesn't|do not|don't|did not)\s+(?:say|mention|state|specify|contain|include|provide|give|indicate)\b|"
    r"\bno (?:information|mention|details?|data)\b|\bnot (?:mentioned|stated|specified|provided|given|included)\b|"
    r"\b(?:insufficient|not enough) (?:information|context|details|data)\b|\bcannot be (?:determined|answered)\b|"
    r"\bunable to (?:find|determine)\b|\bnowhere in the\b|"
    r"нет (?:сведений|информации|данных|упоминани)|не (?:указ|упомина|содерж|говорит|сказано)|"
    r"ne (?:mentionne|précise|contient|dit|indique) pas|aucune (?:information|mention)|"
    r"keine (?:Informationen|Angaben)|nicht (?:erwähnt|angegeben|enthalten)|"
    r"no (?:menciona|especifica|contiene|dice|indica)\b|no hay información",
    re.I)
SOURCE_MIN_WORDS = 40


_NOT_NAMES = frozenset("yes no true false none yeah nope да нет oui non ja nein sí si".split())


def _searchable(ref: str) -> list[str]:
    """What of a reference would appear verbatim in a text that gives its answer: the values of a
    labelled answer ("PER: Paul Otieno $$ DATE: 2020" → "Paul Otieno", "2020"), else the reference."""
    items = labelled_items(ref)
    return [value for _, _, value in items] if items else [ref]


def _name_like(ref: str) -> bool:
    """A name (at most 4 words, one of them capitalised, not yes/no), which a text giving the
    answer would write out — unlike a number, which may be computed, or a common word."""
    words = ref.split()
    return (0 < len(words) <= 4 and ref.strip(" .").casefold() not in _NOT_NAMES
            and any(w[:1].isupper() for w in re.findall(r"[^\W\d_][\w'-]*", ref)))


_ASKS_WHEN = re.compile(r"\b(?:when|what year|which year|in what year|what date|когда|в каком году|quand|en quelle année|"
                        r"wann|in welchem jahr|cuándo|en qué año|quando|in che anno|em que ano)\b", re.I)


def _date_like(ref: str, question: str) -> bool:
    """A date or year asked for with "when" / "what year": looked up, not computed."""
    return bool(_ASKS_WHEN.search(question)) and bool(re.fullmatch(r"[\w\s.,/-]{0,30}", ref)) and bool(
        re.search(r"\b1\d{3}\b|\b20\d{2}\b", ref))


def _found_in(ref: str, body: list[str]) -> bool:
    return all(find_span(normalise(v).tokens, body) is not None for v in _searchable(ref) if normalise(v).tokens)


# the verdict a task may offer for a question its input does not answer
_VERDICT = re.compile(r"\b(?:unanswerable|not answerable|cannot be (?:determined|answered|known)|can'?t be (?:determined|"
                      r"answered|known)|not enough (?:info(?:rmation)?|evidence)|insufficient (?:information|evidence)|"
                      r"undetermined|unknown|no answer)\b", re.I)


def offers_no_answer_verdict(rec: dict) -> bool:
    """Whether the task offers "unanswerable" / "cannot be determined" as an answer (its
    instructions, its input or its options name it): then giving it is answering, not refusing."""
    offered = [rec.get("instructions") or "", input_of(rec)] + [str(v) for v in options(rec).values()]
    return any(_VERDICT.search(text) for text in offered)


def gives_no_answer_verdict(text: str) -> bool:
    return bool(_VERDICT.search(text))


NO_ANSWER_VERDICT = Title("Gives the no-answer verdict the reference gives", NO_ERROR)


def _verdict_given(rec: dict) -> Finding | Look | None:
    """The no-answer verdict where the task offers it: the reference's own verdict in other words
    is no model error; against a reference that is an answer, the verdict is wrong, and why the
    model judged so is not visible offline."""
    refs = gold_refs(rec)
    out = output_of(rec).strip()
    if refs and all(_VERDICT.fullmatch(r.strip(" .").casefold()) for r in refs):
        return NO_ANSWER_VERDICT.finding(
            "no_answer_verdict",
            f"The task offers a verdict for questions the input does not answer; the reference is that verdict "
            f"(\"{shorten(refs[0], 40)}\") and the output gives it in other words: \"{shorten(out, 60)}\".",
            (Evidence(f"Gives the verdict \"{shorten(refs[0], 40)}\"", _head_sentence(out)),),
            no_model_error=f"the output \"{shorten(out, 60)}\" gives the no-answer verdict the reference \"{shorten(refs[0], 40)}\" "
                           f"gives; {rec.get('main_metric') or 'the metric'} scored it as a failure",
        )
    return Look("no-answer verdict", "the task offers a verdict for unanswerable questions and the output gives it, so "
                                     "it answered rather than refused; why it judged the question unanswerable is not visible")


def _head_sentence(out: str) -> str | None:
    first = sentences(out)
    return first[0].strip() if first else None


FALSE_NO_ANSWER = Title("Claims the input lacks an answer it gives", "Refusal")
TRUE_NO_ANSWER = Title("Says the documents lack the answer, and they do", NO_ERROR)


def detect_no_answer_claim(rec: dict) -> Finding | Look | None:
    """The output says the input does not hold the answer. Where a gold reference does occur in
    the passage (the input without its question; normalised, word forms allowed), the claim is
    false: the model overlooked it. Where no reference occurs in a passage of 40+ words and every
    reference is a name (which would be found written out, unlike a paraphrase, a computed number
    or a yes/no), the claim is true: the documents the model was given lack the answer, which is
    the retrieval's or the task's failure, not the model's."""
    out = output_of(rec)
    opening = " ".join(sentences(out)[:2])
    offered = offers_no_answer_verdict(rec)
    claim = _NO_ANSWER.search(opening) or (_VERDICT.search(opening) if offered else None)
    refs = gold_refs(rec)
    passage = _passage(rec)
    if not claim or not refs or word_count(out) > 60 or not passage.strip() or is_multiple_choice(rec):
        return None
    if offered:
        return _verdict_given(rec)
    quote = next((s for s in sentences(out) if claim.group(0) in s), out.strip())
    body = normalise(input_of(rec)).tokens  # given anywhere in the input, the question included
    present = [r for r in refs if normalise(r).tokens and _found_in(r, body)]
    if present:
        return FALSE_NO_ANSWER.finding(
            "false_no_answer",
            f"The model says the input does not give the answer, but it does: \"{shorten(present[0], 60)}\".",
            (Evidence(f"Finds \"{shorten(present[0], 60)}\" in the input", quote),),
        )
    if word_count(passage) >= SOURCE_MIN_WORDS and all(_name_like(v) for r in refs for v in _searchable(r)):
        return TRUE_NO_ANSWER.finding(
            "true_no_answer",
            f"The model says the input does not give the answer, and no reference (\"{shorten(refs[0], 40)}\") occurs in "
            f"it: the documents it was given lack the answer.",
            (Evidence("Answers from the documents given", quote),),
            no_model_error=f"the input does not contain the reference answer (\"{shorten(refs[0], 40)}\"); the model said "
                           f"so instead of guessing",
        )
    return None


def _item_texts(text: str) -> list[str]:
    return [p.strip(" .") for p in ITEMS.split(re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", text.strip())) if p.strip(" .")]


def detect_partial_answer(rec: dict) -> Finding | None:
    """A short answer (at most 30 words) that gives some of the items a list-like reference (2+
    items, at most 12 words) names, misses others, and says nothing else beyond the question's
    own words: right as far as it goes, but incomplete."""
    out = output_of(rec)
    if not out.strip() or word_count(out) > 30 or is_multiple_choice(rec) or _CODE.search(out):
        return None
    said = normalise(out).tokens
    question = normalise(question_of(rec)).tokens
    for ref in gold_refs(rec):
        items = _item_texts(ref)
        if len(items) < 2 or word_count(ref) > 12:
            continue
        found = {i: normalise(i).tokens for i in items}
        present = [i for i, t in found.items() if t and find_span(t, said) is not None]
        missing = [i for i, t in found.items() if t and find_span(t, said) is None]
        covered = {x for i in present for x in found[i]}
        extra = [t for t in said if t not in STOPWORDS and not any(same_form(t, x) for x in covered | set(question))]
        if present and missing and not extra:
            return PART_OF_ANSWER.finding(
                "partial_answer",
                f"The answer names {', '.join(repr(p) for p in present)} but not {', '.join(repr(m) for m in missing)}, "
                f"which the reference \"{shorten(ref, 60)}\" also requires.",
                tuple(Evidence(f"Also names \"{m}\"") for m in missing),
            )
    return None


def _passage(rec: dict) -> str:
    """The input without its question: the passage, transcript or documents the model was given."""
    source, question = input_of(rec), question_of(rec)
    return source[: source.rfind(question)] if question and question in source else source


RETRIEVAL_MISS = Title("The documents given do not contain the answer", NO_ERROR)


def detect_retrieval_miss(rec: dict) -> Finding | None:
    """Documents (40+ words besides the question) in which no gold reference occurs, when every
    reference is a name in the documents' own script (of a labelled answer, each value), or a
    date or year the question asks for with "when" / "what year" — so it would be found written
    out if it were there: the model was not given the answer. The retrieval's failure (or the
    task's), not the model's, whatever the model then said."""
    refs = gold_refs(rec)
    passage = _passage(rec)
    if not refs or word_count(passage) < SOURCE_MIN_WORDS or is_multiple_choice(rec) or not output_of(rec).strip():
        return None
    script = main_script(passage)
    if script is None or any(main_script(r, min_letters=1) not in (script, None) for r in refs):
        return None  # a Russian answer is not searched for in English documents
    question = question_of(rec)
    if not all(_name_like(v) or _date_like(v, question) for r in refs for v in _searchable(r)):
        return None
    body = normalise(input_of(rec)).tokens  # given anywhere in the input, the question included
    if any(_found_in(r, body) for r in refs):
        return None
    return RETRIEVAL_MISS.finding(
        "retrieval_miss",
        f"None of the documents the model was given mentions the reference answer (\"{shorten(refs[0], 40)}\"), so it "
        f"could not have read it there.",
        (Evidence("Answers from the documents given"),),
        no_model_error=f"the documents given do not contain the reference answer (\"{shorten(refs[0], 40)}\"): a "
                       f"retrieval or task failure",
    )
