"""Model and user text on screen: always as text, never as Markdown or HTML, and cut for display.

Streamlit renders Markdown in st.markdown, st.write, captions, alerts, headers and widget/tab/
metric labels. Data (outputs, references, choices, titles, summaries, notes, model names, URL
parameters) goes to st.text / st.code / dataframe cells, or through `md` (a one-line label with
every Markdown character escaped) or `html_text` (HTML with every Markdown character turned into
an entity and no newline, so neither an HTML tag nor a Markdown construct can form).

Every one of them also shows invisible and direction-changing characters (Unicode category Cf:
zero-width spaces, direction marks and overrides, the byte-order mark, the soft hyphen) as
`<U+XXXX>` (`visible`): a tool result "safe\\u202eexe.txt" would otherwise read "safetxt.exe",
and two model names that differ by a zero-width space would look the same. Text drawn another
way (st.code, st.json, table cells, widget options) goes through `visible` / `visible_data`
first. What is stored stays as the log gave it.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

import streamlit as st

from core.names import visible
from core.numbers import NumberError, whole_number


def _display_chars(default: int = 20000) -> int:
    raw = os.environ.get("FAULTLINE_DISPLAY_CHARS")
    if raw is None or not raw.strip():
        return default
    try:
        return whole_number(raw, "FAULTLINE_DISPLAY_CHARS", low=1, what="a number of characters")
    except NumberError as exc:  # said in the server's log; a page never fails on it
        print(f"warning: {exc.message}; pages show {default:,} characters of a text", file=sys.stderr)
        return default


# A 200 MB output took the app to 1.7 GB and past the websocket's message size: cut for display.
DISPLAY_CHARS = _display_chars()

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'^%@])")
_AUTOLINK = re.compile(r"(?i):(?=//)|www(?=\.)|(?=@)")
_WORD = re.compile(r"[^\W_]")  # a letter or digit, any script
_ENTITY_SPECIAL = re.compile(r"[&<>\"'`*_{}\[\]()#+\-.!|~$:=^%@\\]")


def clip(text: str | None, limit: int = DISPLAY_CHARS) -> tuple[str, int]:
    """`text` cut to `limit` characters, and how many were cut (0 when none)."""
    text = text or ""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def cut_note(cut: int) -> str:
    return f"[… {cut:,} more characters not shown; the full text is in the store]"


def visible_data(value: Any) -> Any:
    """A JSON-like value (for st.json, a table's cells) with every string in it `visible`."""
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, dict):
        return {visible_data(k): visible_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_data(v) for v in value]
    return value


def md(text, limit: int = 300) -> str:
    """One line of data made safe to put inside Markdown (labels, captions, headers)."""
    one_line = " ".join(str(text if text is not None else "").split())
    one_line, cut = clip(one_line, limit)
    # invisible characters as <U+XXXX> first: the zero-width space below is ours, not the data's
    one_line = visible(one_line)
    # Streamlit's GFM turns URLs, www. names and e-mail addresses in plain text into live links
    # even when escaped; a zero-width space keeps them from matching
    one_line = _AUTOLINK.sub(lambda m: m.group(0) + "\u200b", one_line)
    return _MD_SPECIAL.sub(_escape, one_line) + ("…" if cut else "")


def _escape(m: re.Match) -> str:
    """A Markdown character with a backslash before it — except an underscore between two letters
    or digits (`aci_bench`): CommonMark never opens or closes emphasis there, and Streamlit puts
    a widget's label into its aria-label as written, so a screen reader read `aci\\_bench`."""
    char, at, text = m.group(1), m.start(), m.string
    if char == "_" and 0 < at < len(text) - 1 and _WORD.match(text[at - 1]) and _WORD.match(text[at + 1]):
        return char
    return "\\" + char


def code(text, limit: int = 300) -> str:
    """One line of data as a Markdown code span: shown as written (inside a code span nothing is
    Markdown, so escaping would show its backslashes: `find\\_user` for find_user), fenced by one
    backtick more than the longest run of backticks in it."""
    one_line, cut = clip(" ".join(str(text if text is not None else "").split()), limit)
    one_line = visible(one_line) + ("…" if cut else "")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", one_line)), default=0) + 1)
    pad = " " if one_line.startswith("`") or one_line.endswith("`") else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def md_lines(text, limit: int = 8000) -> str:
    """Several lines of data made safe for Markdown, each kept on its own line (indented ones
    indented): a whole error message, never cut after its first line."""
    lines, cut = clip(str(text if text is not None else ""), limit)
    lines = visible(lines)
    out = []
    for line in lines.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        out.append("\u00a0" * indent + md(line, limit))
    return "  \n".join(out) + ("…" if cut else "")


def html_text(text: str) -> str:
    """HTML-escaped text whose Markdown characters are entities and newlines are <br>: safe
    inside st.markdown(unsafe_allow_html=True) whatever the text holds."""
    escaped = _ENTITY_SPECIAL.sub(lambda m: f"&#{ord(m.group(0))};", visible(text))
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def show(text: str | None, limit: int = DISPLAY_CHARS) -> None:
    """A block of data as plain text, cut with a visible note when very long."""
    shown, cut = clip(text, limit)
    st.text(visible(shown) if shown else "(empty)")
    if cut:
        st.caption(cut_note(cut))


def cell(text: str | None, limit: int = 2000) -> str | None:
    """Text for a dataframe cell (rendered as text): cut so a huge output cannot swamp a table."""
    if text is None:
        return None
    shown, cut = clip(text, limit)
    return visible(shown) + (f" [… {cut:,} more characters]" if cut else "")
