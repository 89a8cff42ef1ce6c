"""When a run was made, as its log says: the one time every reader reads the same way.

Stored as a naive timestamp in UTC when the log gives a time zone (an ISO time with an offset, a
Unix epoch); a time without one (lm-eval's file-name stamp, oaieval's `created_at`) is kept as
written. It orders reruns of one model on one task (store/runs.py `reruns`), nothing else.
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from .numbers import number_or_none

# lm-eval names its files with the local time, ':' replaced by '-' (2025-09-09T13-31-53.431753)
_DASHED = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2})-(\d{2})-(\d{2}(?:\.\d+)?)$")
# epochs in seconds between 2001 and 2100: a bigger number is in milliseconds
_EPOCH_SECONDS = (1e9, 4.1e9)


def log_time(value: Any) -> datetime | None:
    """A time as logs write it — ISO 8601 (with Z or an offset, or none), `YYYY-MM-DD HH:MM:SS`,
    lm-eval's dashed stamp, a Unix epoch in seconds or milliseconds (number or text) — or None
    when it is none of these."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        number = number_or_none(text)  # ASCII digits only: float() also reads "١٧٠٠٠٠٠٠٠٠"
        if number is not None:
            return log_time(number)
        dashed = _DASHED.match(text)
        if dashed:
            text = f"{dashed[1]}T{dashed[2]}:{dashed[3]}:{dashed[4]}"
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed.astimezone(timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed
    if isinstance(value, int) and value > 1e15:
        return None  # far past any epoch in milliseconds (and a 400-digit one would not divide)
    if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
        seconds = value / 1000 if value > _EPOCH_SECONDS[1] else value
        if not _EPOCH_SECONDS[0] <= seconds <= _EPOCH_SECONDS[1]:
            return None
        return datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)
    return None
