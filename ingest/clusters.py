"""`--cluster DATASET=FIELD`: which field of a log's samples names the questions that are not
independent (a passage id, a repository, a patient), read by the formats whose samples carry
their own fields — an lm-eval sample's `doc`, an Inspect sample's `metadata`. A custom table
names its cluster column with `--map cluster=COLUMN`. Statistics over clusters: core/clustered.py."""

from __future__ import annotations

from typing import Any

from core.errors import IngestError
from core.flags import assignments
from core.numbers import shown

from .options import ReadOptions


def parse(items: list[str]) -> dict[str, str]:
    """--cluster values as {dataset: field}; `*` for every dataset."""
    return {dataset.strip(): field.strip() for dataset, field in
            assignments(items, "--cluster", "DATASET=FIELD", example="squad=title (or *=FIELD for every dataset)").items()}


def field_for(options: ReadOptions, dataset: str | None, dataset_raw: str | None = None) -> str | None:
    """The field naming this dataset's clusters, if the user gave one."""
    given = options.cluster_fields
    for key in (dataset, dataset_raw, "*"):
        if key is not None and key in given:
            return given[key]
    return None


def value(sample: Any, field: str, where: str) -> str | None:
    """The sample's cluster: its `field` (a dotted path into nested objects) as text; None when the
    value is null. A missing field is an error that names the sample: a cluster silently left out
    would make its question look independent."""
    node = sample
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            raise IngestError(f"{where}: no field {shown(field)} for --cluster in this sample")
        node = node[part]
    if node is None:
        return None
    if isinstance(node, (dict, list)):
        raise IngestError(f"{where}: --cluster field {shown(field)} is a {type(node).__name__}, not a value")
    return str(node)
