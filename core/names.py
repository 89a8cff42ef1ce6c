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

import contextlib
import hashlib
import re
import string
import sys
import unicodedata
from typing import Iterator

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
        # collapse (tests/store/test_shared_questions.py checks both ways agree on every code point)
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


def invisible(ch: str) -> bool:
    """Whether `ch` is a format character (Unicode category Cf): shown as nothing, or as a change
    of direction — zero-width spaces and joiners (U+200B–U+200D), the direction marks, overrides
    and isolates (U+200E/F, U+202A–E, U+2066–9, U+061C), the byte-order mark U+FEFF, the soft
    hyphen U+00AD, the tag characters U+E0000–U+E007F (text no one sees)."""
    return unicodedata.category(ch) == "Cf"


def control_character(name: str) -> str | None:
    """Why `name` cannot be a name (a model, a dataset, a domain, a split), or None.

    A NUL byte in a model name ingested fine and then hung the taxonomy page for good (the
    dataframe renderer panics on it in a column name); other control characters (tabs,
    newlines, escape sequences) and bidirectional overrides make a name read as another, and an
    invisible character (a zero-width space, a direction mark, a byte-order mark) makes two
    names that differ look the same."""
    for i, ch in enumerate(name):
        category = unicodedata.category(ch)
        if category == "Cc" or ch in _BIDI:
            what = "NUL" if ch == "\0" else f"U+{ord(ch):04X} ({unicodedata.name(ch, 'a control character')})"
            return f"holds a control character ({what} at position {i + 1}); names must be printable text"
        if category == "Cf":
            return (f"holds an invisible character (U+{ord(ch):04X} ({unicodedata.name(ch, 'a format character')}) "
                    f"at position {i + 1}), which makes it look like another name; names must be printable text")
    return None


_FORMAT_CHARACTERS: re.Pattern | None = None


def _format_characters() -> re.Pattern:
    """A pattern matching every Cf character (built once, on first use). They lie in the first two
    planes and in plane 14 (the tags); the planes between hold none."""
    global _FORMAT_CHARACTERS
    if _FORMAT_CHARACTERS is None:
        found = [c for c in (*range(0x20000), *range(0xE0000, 0xE1000)) if unicodedata.category(chr(c)) == "Cf"]
        _FORMAT_CHARACTERS = re.compile("[" + "".join(re.escape(chr(c)) for c in found) + "]")
    return _FORMAT_CHARACTERS


def visible(text: str) -> str:
    """`text` for a page or a terminal: every invisible or direction-changing character (category
    Cf, see `invisible`) shown as `<U+XXXX>`, so "safe\\u202eexe.txt" reads as
    "safe<U+202E>exe.txt" instead of "safetxt.exe", and two names that differ by a zero-width
    space look different. What is stored stays as the log gave it."""
    if text.isascii():
        return text
    return _format_characters().sub(lambda m: f"<U+{ord(m.group(0)):04X}>", text)


def json_visible(text: str) -> str:
    """JSON text with every Cf character inside its strings written as a `\\uXXXX` escape: the
    same data (a JSON reader gets the same strings back), nothing that reorders or hides text
    when the JSON is shown."""
    if text.isascii():
        return text

    def escape(m: re.Match) -> str:
        code = ord(m.group(0))
        if code <= 0xFFFF:
            return f"\\u{code:04x}"
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"

    return _format_characters().sub(escape, text)


def check_name(value: object) -> object:
    """A pydantic validator body: refuse a name with a control character (see above)."""
    if isinstance(value, str):
        why = control_character(value)
        if why:
            raise ValueError(f"{value!r} {why}")
    return value


class _VisibleStream:
    """A text stream writing what it is given through `visible` (everything else passes through)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(visible(text))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextlib.contextmanager
def visible_output() -> Iterator[None]:
    """A command's stdout and stderr, while it runs, show invisible and direction-changing
    characters of the names and texts it prints as `<U+XXXX>` (see `visible`). JSON it prints
    goes through `json_visible` first, so its strings stay the same data."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _VisibleStream(out), _VisibleStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
