"""Benchmark logs → normalized runs, instances and predictions in the store."""

from .errors import IngestError
from .export import ExportSummary, export_eee
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
