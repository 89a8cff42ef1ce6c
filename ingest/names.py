"""Names that line up across harnesses: canonical dataset names and question hashes.

A dataset's canonical name drops harness prefixes (`inspect_evals/gsm8k` → `gsm8k`), follows
HELM's run-group spelling (`SimpleSafetyTests` → `simple_safety_tests`) and then the alias table
(ALIASES, extended by `aliases:` in the `--config` file). The log's own name stays in
`runs.dataset_raw`.

question_hash is a hash of the normalized question text only (lower-case, whitespace collapsed,
punctuation stripped from both ends): harnesses format choices differently and not every reader
has them, so the text alone is what two harnesses reliably share.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata

PREFIXES = ("inspect_evals/", "inspect_ai/", "lm_eval/", "helm/")
# Shipped aliases: the same benchmark under another harness's name.
ALIASES = {
    "narrativeqa": "narrative_qa",
    "gsm8k_cot": "gsm8k",
    "mmlu_0_shot": "mmlu",
}
_EDGES = string.punctuation + string.whitespace


def _alnum(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def snake(name: str) -> str:
    """CamelCase or spaced names in HELM's run-group style: SimpleSafetyTests → simple_safety_tests."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return re.sub(r"[^a-z0-9_./-]+", "_", name.lower()).strip("_")


def canonical_dataset(raw: str, aliases: dict[str, str] | None = None, groups: list[str] | None = None) -> str:
    """The canonical name of a dataset as a log names it. `groups` (HELM runs only) are the run's
    groups: the one naming the same scenario gives the spelling, else the scenario name is put in
    run-group style. Other formats keep their names' spelling."""
    name = raw.strip()
    lowered = name.lower()
    for prefix in PREFIXES:
        if lowered.startswith(prefix):
            name = name[len(prefix):]
            break
    table = {**ALIASES, **(aliases or {})}
    if name in table:
        return table[name]
    if groups is None:
        return name
    same = [g for g in groups if _alnum(g) == _alnum(name)]
    canonical = same[0] if same else snake(name)
    return table.get(canonical, canonical)


def normalize_question(text: str) -> str:
    # str.split's whitespace is exactly the regex \s (Py_UNICODE_ISSPACE, checked over every code
    # point) and the join is several times faster than a substitution on a million questions
    lowered = text.lower()
    if lowered.isprintable() and "  " not in lowered:
        # the common case, a third of the time: every whitespace character but the space is
        # unprintable, so here the only whitespace is single spaces and there is nothing to
        # collapse (tests/test_shared_questions.py checks both ways agree on every code point)
        return lowered.strip(_EDGES)
    return " ".join(lowered.split()).strip(_EDGES)


def question_hash(text: str | None) -> str | None:
    if not isinstance(text, str):
        return None
    normalized = normalize_question(text)
    if not normalized:
        return None
    return hashlib.sha1(normalized.encode()).hexdigest()[:16]


# Bidirectional overrides and isolates: they reorder how a name reads (the "Trojan Source" trick)
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def control_character(name: str) -> str | None:
    """Why `name` cannot be a name (a model, a dataset, a domain, a split), or None.

    A NUL byte in a model name ingested fine and then hung the taxonomy page for good (the
    dataframe renderer panics on it in a column name); other control characters (tabs,
    newlines, escape sequences) and bidirectional overrides make a name read as another."""
    for i, ch in enumerate(name):
        if unicodedata.category(ch) == "Cc" or ch in _BIDI:
            what = "NUL" if ch == "\0" else f"U+{ord(ch):04X} ({unicodedata.name(ch, 'a control character')})"
            return f"holds a control character ({what} at position {i + 1}); names must be printable text"
    return None


def check_name(value: object) -> object:
    """A pydantic validator body: refuse a name with a control character (see above)."""
    if isinstance(value, str):
        why = control_character(value)
        if why:
            raise ValueError(f"{value!r} {why}")
    return value
