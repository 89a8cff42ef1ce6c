"""Evidence quotes from a stage-1 analysis, located in the failed output and highlighted.

An analyst may paraphrase instead of quoting; a quote that does not occur verbatim in the output
(taxonomy.quotes says what verbatim allows) is marked unverified rather than silently trusted.
"""

from __future__ import annotations

from taxonomy.quotes import criteria, spans  # noqa: F401  (criteria: the pages read it from here)

from .text import html_text


def locate(output: str, quote: str) -> tuple[int, int] | None:
    """Span of `quote` in `output` when it occurs there verbatim (from its first fragment to its
    last), or None."""
    found = spans(output, quote)
    return (found[0][0], found[-1][1]) if found else None


OUTPUT_STYLE = "border-left: 3px solid rgba(49, 51, 63, 0.2); padding: 0.1rem 0 0.1rem 0.75rem; margin-bottom: 0.75rem"


def highlight(output: str, quotes: list[str], style: str = "") -> str:
    """HTML of `output` with every verified quote (each fragment of it) wrapped in <mark>;
    everything else escaped for both HTML and Markdown, on one line, so no text in it can end the
    <div> or form markup. `style`: more CSS for the <div> (a constant of the caller's, never text
    from a log)."""
    found = sorted(s for q in quotes for s in (spans(output, q) or []))
    merged: list[list[int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts, pos = [], 0
    for start, end in merged:
        parts += [html_text(output[pos:start]), "<mark>", html_text(output[start:end]), "</mark>"]
        pos = end
    parts.append(html_text(output[pos:]))
    return f'<div style="white-space: pre-wrap{"; " + style if style else ""}">{"".join(parts)}</div>'
