"""HELM's own word on its run groups, for suites without a schema.json (written by `helm-run`
alone, before `helm-summarize`): each group's main metric and split, and the metrics' display
names and direction. The table (run_groups.yaml beside this module) is extracted from HELM's
`src/helm/benchmark/static/schema*.yaml` by make_run_groups.py; its header names the
HELM commit it was taken from.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

TABLE_FILE = Path(__file__).resolve().parent / "run_groups.yaml"


@dataclass(frozen=True)
class Headline:
    """One main metric and split HELM has named for a run group, and where."""

    group: str
    metric: str
    split: str | None
    where: str  # e.g. "HELM's lite, classic schemas" or "HELM's schemas until 0d8049c32 (2024-08-19)"


@cache
def _table() -> dict:
    import yaml

    return yaml.load(TABLE_FILE.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def version() -> str:
    return str(_table()["helm_version"])


def headlines(group: str) -> list[Headline]:
    """The group's main metric candidates, most authoritative first (see the generator)."""
    out = []
    for entry in _table()["run_groups"].get(group) or []:
        schemas = entry.get("schemas")
        where = f"HELM's {', '.join(schemas)} schema{'s' * (len(schemas) > 1)}" if schemas else f"HELM's schemas until {entry['until']}"
        out.append(Headline(group, entry["main_name"], entry.get("main_split"), where))
    return out


def metric(name: str) -> dict:
    """HELM's display names and direction for a main metric (empty when the table lacks it)."""
    return _table()["metrics"].get(name) or {}
