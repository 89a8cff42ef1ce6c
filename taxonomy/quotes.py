"""Whether an analyst's evidence quote is really in the output it quotes.

An analyst may paraphrase instead of quoting. A quote counts as verified when it occurs verbatim
in the output: the same characters, case included, with two allowances that do not change what is
quoted — any run of whitespace matches any other (line breaks are often re-flowed), and an
ellipsis (`...` or `…`) may join fragments that occur in that order. Quotation marks around the
whole quote are not part of it.
"""

from __future__ import annotations

import re

_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…)\s*")
_WRAPPERS = "\"'“”‘’`"


def spans(output: str | None, quote: str | None) -> list[tuple[int, int]] | None:
    """Where each fragment of `quote` occurs in `output`, in order; None when it does not (or
    there is nothing to look for)."""
    text = (quote or "").strip().strip(_WRAPPERS).strip()
    if not text or not output:
        return None
    fragments = [f for f in _ELLIPSIS.split(text) if f.strip()]
    if not fragments:
        return None
    found, pos = [], 0
    for fragment in fragments:
        pattern = r"\s+".join(re.escape(word) for word in fragment.split())
        m = re.compile(pattern).search(output, pos)
        if m is None:
            return None
        found.append(m.span())
        pos = m.end()
    return found


def verified(output: str | None, quote: str | None) -> bool | None:
    """True: the quote is in the output; False: it is not; None: there is no quote."""
    if not (quote or "").strip().strip(_WRAPPERS).strip():
        return None
    return spans(output, quote) is not None


def criteria(raw) -> list[dict]:
    """The stage-1 `required_criteria` list; other shapes (e.g. an offline analyst's detector
    record) carry no criteria."""
    return [c for c in raw if isinstance(c, dict)] if isinstance(raw, list) else []


def check_criteria(criteria: list[dict], output: str | None) -> list[dict]:
    """The criteria with `evidence_verified` set on each (None where it quotes nothing)."""
    return [{**c, "evidence_verified": verified(output, c.get("evidence"))} for c in criteria]
