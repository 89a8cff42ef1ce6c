"""Benchmark logs → normalized runs, instances and predictions in the store."""

from .errors import IngestError
from .export import ExportSummary, export_eee
from .load import IngestSummary, ingest_paths
from .options import ReadOptions
from .passfail import PassConfig
from .records import (RECORD_SCHEMA_VERSION, InstanceRecord, JudgeNote, ParsedRun, PredictionRecord, RunRecord,
                      Skipped)
from .registry import FORMATS, READERS

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
    "Skipped",
    "export_eee",
    "ingest_paths",
]
