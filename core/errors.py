"""The errors a user should read: each carries a message meant for them, and the CLI turns it
into an exit code (`exit_code`) and prints `.message`, never a traceback."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Iterable


class FaultlineError(Exception):
    """An error caused by input or environment, with a message meant for the user."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class IngestError(FaultlineError):
    """Input cannot be read: a log, a flag's value, a setting. The message names the file (and
    line) or the flag, and what is wrong."""


@dataclass(frozen=True)
class Ask:
    """A per-dataset flag an error asks the user to give (the app offers a field for each)."""

    flag: str  # --scale, --pass-threshold, --main-metric, --map
    key: str  # what KEY= names: the dataset (--scale, --pass-threshold, --main-metric), or the field (--map)
    placeholder: str  # LOW:HIGH, X, NAME, SCORER/FIELD

    @property
    def typed(self) -> str:
        """The flag as the user would type it in a shell (dataset names may hold spaces)."""
        return f"{self.flag} {shlex.quote(f'{self.key}={self.placeholder}')}"


class SettingsNeeded(IngestError):
    """Input that is refused until the user gives settings: the message says them in words (each
    Ask's `typed`), `asks` holds the same for a program — the app reads them from the command's
    result file (core/result.py), never back out of the message."""

    def __init__(self, message: str, asks: Iterable[Ask]):
        super().__init__(message)
        self.asks = list(dict.fromkeys(asks))  # in order, each once
