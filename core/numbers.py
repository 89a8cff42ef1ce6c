"""Numbers given as text — by a person (a flag, a URL parameter, an MCP cursor, a setting) or by a
log (a field written as a string) — read by one rule, with a message that says what is wrong.

`int()`, `float()` and `str.isdigit()` take more than a number written in digits: `int("٣")` is 3
(any Unicode decimal digit counts), `"²".isdigit()` is True though `int("²")` raises, 5,000
digits raise a ValueError (Python's 4,300-digit limit), `float("1e999")` is inf, `float("nan")`
a NaN and `float("1_0")` 10. Here only ASCII digits count, a whole number has at most 18 of them
(it fits in 64 bits), a decimal is finite and of bounded length, and anything else is a
NumberError (an IngestError, so the CLIs print it and exit 2; a ValueError, so a caller may
catch it as one) naming where the text came from, the text (shortened) and what was expected.
"""

from __future__ import annotations

import argparse
import math
import re

from .errors import IngestError

MAX_DIGITS = 18
_WHOLE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")
_SIGNED = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
# a decimal as people and JSON write it: digits, a point, an exponent of at most 3 digits
_DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,40}(?:\.[0-9]{0,40})?|\.[0-9]{1,40})(?:[eE][+-]?[0-9]{1,3})?")
_SPACE = " \t\r\n"
SHOWN_CHARS = 40


class NumberError(IngestError, ValueError):
    """A number given as text that is not one (or not in range); `.message` says where and why."""


def shown(text: object, limit: int = SHOWN_CHARS) -> str:
    """`text` for a message: its repr (escapes show invisible characters), cut after `limit`
    characters with the length said."""
    if isinstance(text, int) and not isinstance(text, bool) and text.bit_length() > 128:
        return f"an integer of about {int(text.bit_length() * 0.30103):,} digits"  # repr() stops at 4,300
    if not isinstance(text, str):
        text = repr(text)
        return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def whole_number(text: object, where: str, *, low: int | None = 0, high: int | None = None,
                 what: str = "a whole number") -> int:
    """`text` (a string of ASCII digits, optionally with a leading `-` when `low` is negative or
    None, spaces around allowed; or an int) as an int within [low, high], else NumberError."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str):
        body = text.strip(_SPACE)
        pattern = _SIGNED if low is None or low < 0 else _WHOLE
        if not pattern.fullmatch(body):
            raise NumberError(f"{_at(where)}{shown(text)} is not {what} (expected ASCII digits 0-9, at most "
                              f"{MAX_DIGITS})")
        value = int(body)
    else:
        raise NumberError(f"{_at(where)}expected {what}, found {shown(text)}")
    _check_range(value, where, low, high)
    return value


def decimal_number(text: object, where: str, *, low: float | None = None, high: float | None = None,
                   what: str = "a number") -> float:
    """`text` (a decimal written with ASCII digits, e.g. `0.7`, `-1`, `2.5e-3`; or an int/float)
    as a finite float within [low, high], else NumberError."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            value = float(text)
        except OverflowError:  # an int beyond the float range
            raise NumberError(f"{_at(where)}{shown(text)} is not a finite number") from None
    elif isinstance(text, str):
        body = text.strip(_SPACE)
        if not _DECIMAL.fullmatch(body):
            raise NumberError(f"{_at(where)}{shown(text)} is not {what} (expected a decimal in ASCII digits, "
                              "e.g. 0.7 or 2.5e-3)")
        value = float(body)
    else:
        raise NumberError(f"{_at(where)}expected {what}, found {shown(text)}")
    if not math.isfinite(value):
        raise NumberError(f"{_at(where)}{shown(text)} is not a finite number")
    _check_range(value, where, low, high)
    return value


# what float() reads besides decimals, written in ASCII (lm-eval writes "NaN" and "Infinity")
_SPECIAL = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)


def number_or_none(value: object) -> float | None:
    """A number a log gives, where anything else is not an error but "no number": an int or float
    as a float (an int too large for one: None), text holding a decimal in ASCII digits or
    NaN/Infinity as float() reads them (`float("١")` is 1.0 and `float("1_0")` 10: here None);
    anything else None. Non-finite values are returned as they are: callers decide."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str):
        body = value.strip(_SPACE)
        if _DECIMAL.fullmatch(body) or _SPECIAL.fullmatch(body):
            return float(body)
    return None


def whole_or_none(value: object) -> int | None:
    """A whole number a log gives as text of ASCII digits (at most 18) or as an int, else None
    (`"²".isdigit()` is True but `int("²")` raises: here it is None)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _WHOLE.fullmatch(body := value.strip(_SPACE)):
        return int(body)
    return None


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def arg_type(parse, **bounds):
    """An argparse `type=` reading a flag's value with `parse` (whole_number or decimal_number)
    and `bounds` (low, high, what): argparse then says `argument --flag: '²' is not …` and exits 2."""

    def convert(text: str):
        try:
            return parse(text, "", **bounds)
        except NumberError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = bounds.get("what", "number")  # argparse names the type by it in other errors
    return convert


def _num(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _check_range(value: float, where: str, low, high) -> None:
    if low is not None and value < low or high is not None and value > high:
        if high is None:
            expected = f"at least {_num(low)}"
        elif low is None:
            expected = f"at most {_num(high)}"
        else:
            expected = f"from {_num(low)} to {_num(high)}"
        raise NumberError(f"{_at(where)}{_num(value)} is out of range (expected {expected})")
