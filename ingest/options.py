from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.errors import IngestError
from core.verdicts import PassConfig

from .files import read_capped
from .limits import Limits


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
    # --cluster DATASET=FIELD: the sample field naming each question's cluster (ingest/clusters.py)
    cluster_fields: dict[str, str] = field(default_factory=dict)


def read_config(path: str | Path | None) -> tuple[Path, bytes] | None:
    """`--config FILE`: its path and bytes (a regular file within the size cap), for
    `PassConfig.build`; None when no file is given."""
    if not path:
        return None
    path = Path(path)
    if not path.exists():
        raise IngestError(f"{path}: config file not found")
    return path, read_capped(path)
