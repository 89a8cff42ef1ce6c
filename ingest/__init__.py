"""Benchmark logs → normalized runs, instances and predictions in the store."""

from .errors import IngestError
from .load import IngestSummary, ingest_paths
from .options import ReadOptions
from core.verdicts import PassConfig
from core.records import (RECORD_SCHEMA_VERSION, STEP_KINDS, InstanceRecord, JudgeNote, ParsedRun, PredictionRecord,
                      RunRecord, Skipped, StepRecord)
from .registry import FORMATS, SOURCES
from .transcript import Transcript

__all__ = [
    "FORMATS",
    "SOURCES",
    "RECORD_SCHEMA_VERSION",
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
    "ingest_paths",
]

