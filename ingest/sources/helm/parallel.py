"""How much of a HELM suite is worth parsing on several cores: the files its records are built
from, not all of its bytes.

Forked workers pay for themselves when each run has many predictions to turn into records
(instances, question hashes, verdicts, validation): a generated suite of 200 predictions per run
parsed in 4.0-4.7 s on two workers against 4.8-5.0 s in one process. A suite in helm-run's own
layout holds a handful of predictions per run and most of its bytes in files that are only
parsed — the request states (`scenario_state.json`), the prompts sent (`display_requests.json`),
the run's aggregates (`stats.json`), the per-instance stats — which orjson reads faster than the
workers' results come back: 283 MMLU runs of 22 predictions (114 MB) took 1.3-1.4 s of CPU in
one process and 2.1 s forked, and were slower forked on a shared machine (1.9 s against 2.6 s,
start-up included). So the load compares the bytes predictions and instances are read from with
its threshold (ingest/load.py `parallel_min_bytes`), not the suite's size.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...walk import helm_runs_below

# the files a run's instances and predictions are read from: the display files, else the request states
RECORD_FILES = (("instances.json", "display_predictions.json"), ("scenario_state.json",))


def record_bytes(path: Path) -> int:
    """Bytes of the files the runs below `path` build their records from."""
    total = 0
    for run in helm_runs_below(path):
        for names in RECORD_FILES:
            try:
                total += sum(os.stat(run / name).st_size for name in names)
            except OSError:
                continue  # not this layout: the next
            break
    return total
