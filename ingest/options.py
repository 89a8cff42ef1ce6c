from __future__ import annotations

from dataclasses import dataclass, field

from .limits import Limits
from .passfail import PassConfig


@dataclass(frozen=True)
class ReadOptions:
    """What the user told the CLI about their logs; readers use what applies to their format."""

    pass_config: PassConfig = field(default_factory=PassConfig.empty)
    dataset: str | None = None
    model: str | None = None
    column_map: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits.from_env)
    # read as one part of a folder (a worker's share): a run folder is not then named directly
    part_of_folder: bool = False
    # read only files whose resolved path lies under one of these folders (empty: anywhere)
    only_under: tuple[str, ...] = ()
    # files holding the harness's verdicts for agent logs that carry none (a SWE-bench report)
    verdicts: tuple[str, ...] = ()
