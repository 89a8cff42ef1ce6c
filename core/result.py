"""A command's outcome for the program that started it (the app's jobs): when the environment
names a file in FAULTLINE_RESULT_FILE, the command writes there, as it exits, its exit code, its
error's message and the settings the error asks for — so that program never reads them back out
of the text the command printed, where a dataset's name or a model's answer could mimic a flag."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import TypeAdapter

from .errors import Ask, FaultlineError, SettingsNeeded

RESULT_FILE = "FAULTLINE_RESULT_FILE"


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    error: str | None = None  # the message printed after `error:`
    asks: tuple[Ask, ...] = ()  # the flags the error asks for, for the app to offer fields

    @classmethod
    def failed(cls, exc: FaultlineError) -> "CommandResult":
        return cls(exc.exit_code, exc.message, tuple(exc.asks) if isinstance(exc, SettingsNeeded) else ())


def write_result(result: CommandResult) -> None:
    """Write `result` to $FAULTLINE_RESULT_FILE, if set: whole or not at all (a temporary file
    renamed over it), so a reader never sees half of one. OSError when it cannot be written."""
    target = os.environ.get(RESULT_FILE)
    if not target:
        return
    temporary = Path(f"{target}.tmp")
    temporary.write_text(json.dumps(asdict(result)))
    os.replace(temporary, target)


def read_result(path: Path) -> CommandResult | None:
    """The result a command wrote to `path`; None when there is none (still running, killed
    before it exited) or it is not one."""
    try:
        return TypeAdapter(CommandResult).validate_python(json.loads(path.read_bytes()))
    except (OSError, ValueError):  # pydantic's ValidationError is a ValueError
        return None
