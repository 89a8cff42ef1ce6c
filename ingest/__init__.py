"""Benchmark logs → normalized runs, instances and predictions in the store."""

from .errors import IngestError
from .load import IngestSummary, ingest_paths
from .options import ReadOptions
from .passfail import PassConfig
from .records import (RECORD_SCHEMA_VERSION, STEP_KINDS, InstanceRecord, JudgeNote, ParsedRun, PredictionRecord,
                      RunRecord, Skipped, StepRecord)
from .registry import FORMATS, READERS
from .transcript import Transcript

__all__ = [
    "FORMATS",
    "READERS",
    "RECORD_SCHEMA_VERSION",
    "ExportSummary",
    "IngestError",
    "IngestSummary",
    "InstanceRecord",
    "JudgeNote",
    "ParsedRun",
    "PassConfig",
    "PredictionRecord",
    "ReadOptions",
    "RunRecord",
    "STEP_KINDS",
    "Skipped",
    "StepRecord",
    "Transcript",
    "export_eee",
    "ingest_paths",
]


def __getattr__(name: str):
    # the exporter is imported when first asked for: `python -m ingest PATH` never needs it
    if name in ("ExportSummary", "export_eee"):
        from . import export

        return getattr(export, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
