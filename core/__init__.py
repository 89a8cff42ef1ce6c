"""The ground floor: what every other package rests on, importing nothing of the project.

`errors` (the errors a user reads), `records` (what a source makes of a log: runs, instances,
predictions, steps), `schema` (the loaded tables' columns, declared once), `verdicts` (how a
prediction passes or fails), `names`, `times`, `numbers` (text read as numbers, one rule),
`significance` (the tests behind every comparison), `result` (what a command hands the app),
`counts` (the glossary of counts every surface shows), `flags` (KEY=VALUE flag values, read one way).
Only the light ones are imported here: `schema` needs pyarrow and `significance` scipy.
"""

from .errors import Ask, FaultlineError, IngestError, SettingsNeeded
from .records import (RECORD_SCHEMA_VERSION, InstanceRecord, ParsedRun, PredictionRecord, RunRecord, Skipped,
                      StepRecord)
from .verdicts import PassConfig, PassRule

__all__ = [
    "Ask",
    "FaultlineError",
    "IngestError",
    "InstanceRecord",
    "ParsedRun",
    "PassConfig",
    "PassRule",
    "PredictionRecord",
    "RECORD_SCHEMA_VERSION",
    "RunRecord",
    "SettingsNeeded",
    "Skipped",
    "StepRecord",
]
