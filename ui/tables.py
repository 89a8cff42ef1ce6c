"""Tables on a page, and their CSV download, with text that stays inert.

Model text goes into tables: an output like `=HYPERLINK("http://…","ok")`, `=cmd|' /C calc'!A0`
or `@SUM(…)` is a formula to Excel, LibreOffice and Google Sheets when it starts a CSV cell.
Streamlit's own table toolbar offers "Download as CSV" of exactly what it shows, unescaped, so
that export is turned off (`client.disableDataExport`, .streamlit/config.toml and
`configure_page`, which also stops copying cells to the clipboard) and every table is drawn by
`show_table`, which puts its own CSV download under it: every text cell that starts with `=`, `+`,
`-`, `@`, a tab or a carriage return (or their full-width forms) is prefixed with `'`, the
neutralisation OWASP describes for CSV injection; numbers stay numbers. The page itself shows the
text as it is (it is rendered as text there, never as a formula).

A table that cannot be drawn (a column name with a NUL byte made the dataframe renderer panic
and left the page running for ever) is said so on the page, without a traceback.

Invisible and direction-changing characters (Unicode category Cf) in text cells and column names
are shown as `<U+XXXX>` (core.names.visible), on the page and in the CSV alike: an output
"safe\\u202eexe.txt" would otherwise read "safetxt.exe" in its cell.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import polars as pl
import streamlit as st

from core.names import visible

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FILE_UNSAFE = re.compile(r"[^\w.-]+")


def inert(value: Any) -> Any:
    """A value as it may start a CSV cell: text a spreadsheet would run as a formula is
    prefixed with `'` (it then shows the text); everything else is unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    if isinstance(value, (list, dict)):
        value = json.dumps(value, ensure_ascii=False, default=str)
    elif isinstance(value, pl.Series):
        value = json.dumps(value.to_list(), ensure_ascii=False, default=str)
    return inert(value)


def csv_text(frame: pl.DataFrame, labels: dict[str, str] | None = None) -> str:
    """`frame` as CSV with every cell inert and the column headers as shown (`labels`)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([inert((labels or {}).get(c, c)) for c in frame.columns])
    for row in frame.iter_rows():
        writer.writerow(["" if v is None else _cell(v) for v in row])
    return out.getvalue()


def _frame(data: Any) -> pl.DataFrame:
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, list):
        return pl.DataFrame(data, infer_schema_length=None) if data else pl.DataFrame()
    try:  # pandas, and what else polars takes
        return pl.from_pandas(data) if hasattr(data, "to_numpy") and hasattr(data, "columns") else pl.DataFrame(data)
    except (TypeError, ValueError):
        return pl.DataFrame({"value": [str(data)]})


def safe_name(name: str) -> str:
    """A column name the renderer can take: control characters shown as escapes (`\\x00`),
    invisible ones as `<U+XXXX>`."""
    return visible(_CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", name))


# Rust's regex (polars) finds the cells that need `visible` in one pass over a column; only those
# columns are then rewritten, in Python (map_elements, which holds the GIL per element, once hung
# the server under load)
_FORMAT_CHARACTER = r"\p{Cf}"


def visible_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """`frame` with every text cell holding an invisible character shown by `visible`."""
    changed = {}
    for name, dtype in frame.schema.items():
        if dtype != pl.String:
            continue
        column = frame.get_column(name)
        if column.str.contains(_FORMAT_CHARACTER).any():
            changed[name] = pl.Series(name, [None if v is None else visible(v) for v in column.to_list()],
                                      dtype=pl.String)
    return frame.with_columns(**changed) if changed else frame


def _labels(columns: list[str], config: dict | None) -> tuple[list[str], dict[str, str]]:
    """The columns a table shows (a column configured as None is hidden) and their labels."""
    shown, labels = [], {}
    for c in columns:
        spec = (config or {}).get(c, c)
        if spec is None:
            continue
        shown.append(c)
        if isinstance(spec, str):
            labels[c] = spec
        elif isinstance(spec, dict) and spec.get("label"):
            labels[c] = spec["label"]
    return shown, labels


def show_table(data: Any, *, name: str, where=None, column_config: dict | None = None,
          column_order: list[str] | None = None, **kwargs):
    """`st.dataframe(data, …)` with a CSV download of what it shows, every cell inert.

    `name` names the file (`faultline-<name>.csv`) and keys the button; `where` is the
    container to draw in (a column, a tab), the page by default. Returns what st.dataframe does
    (its selection, with `on_select`)."""
    place = where if where is not None else st
    frame = visible_cells(_frame(data))
    renamed = {c: safe_name(c) for c in frame.columns if safe_name(c) != c}
    if renamed:
        frame = frame.rename(renamed)
        column_config = {renamed.get(k, k): v for k, v in (column_config or {}).items()}
        column_order = [renamed.get(c, c) for c in column_order] if column_order else column_order
    try:
        shown_table = place.dataframe(frame, column_config=column_config, column_order=column_order, **kwargs)
    except BaseException as exc:
        # the data's fault (a panic in a native library is a BaseException: left alone it ends
        # the script thread and the page stays "running" for ever) is said here; Streamlit's own
        # errors (a misuse of its API, a bug to see) and its control flow pass through
        if isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__module__.startswith("streamlit"):
            raise
        place.error(f"This table could not be drawn ({type(exc).__name__}); the rest of the page is shown.",
                    icon=":material/table_rows:")
        return None
    if frame.is_empty():
        return shown_table
    shown, labels = _labels(list(frame.columns), column_config)
    if column_order:
        shown = [c for c in column_order if c in shown]
    place.download_button(
        "CSV", lambda: csv_text(frame.select(shown), labels).encode("utf-8"),
        file_name=f"faultline-{_FILE_UNSAFE.sub('-', name)[:80]}.csv", mime="text/csv", icon=":material/download:", type="tertiary", key=f"csv-{name}",
        help="This table as CSV. Text that a spreadsheet would run as a formula (it starts with =, +, -, @) "
             "is prefixed with ' so that it opens as text.")
    return shown_table
