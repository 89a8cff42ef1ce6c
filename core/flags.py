"""`KEY=VALUE` flag values (--scale, --pass-threshold, --main-metric, --map, --cluster), read one
way: the first `=` splits them, both sides must be there, and the message shows the value as given
(escaped: a dataset's name can hold invisible characters)."""

from __future__ import annotations

from .errors import IngestError
from .numbers import shown


def assignment(item: str, flag: str, shape: str, every: str | None = None, example: str = "") -> tuple[str, str]:
    """(key, value) of one `KEY=VALUE` given to `flag`; `shape` names them for the message
    ("DATASET=FIELD"). With `every`, a bare VALUE is (every, VALUE) — a setting for every dataset.
    Spaces around either side are kept: a dataset's name is matched as the log spells it."""
    key, sep, value = item.partition("=")
    if not sep and every is not None and item:
        return every, item
    if not sep or not key.strip() or not value.strip():
        bare = f" or {shape.split('=', 1)[1]}" if every is not None else ""
        raise IngestError(f"{flag} {shown(item)}: expected {shape}{bare}" + (f", e.g. {example}" if example else ""))
    return key, value


def assignments(items: list[str], flag: str, shape: str, example: str = "") -> dict[str, str]:
    """Every `KEY=VALUE` given to a repeatable flag, as {key: value}; a key given twice keeps the last."""
    return dict(assignment(item, flag, shape, example=example) for item in items)
