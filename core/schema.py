"""The columns of the tables a load writes, declared once: the runs, instances, predictions and
transcript_steps tables (store/migrations.py creates them; tests/test_schema.py holds these
declarations to the migrated database), the Arrow schemas a reader's transcript and the store's
staging build, and the column order every insert names."""

from __future__ import annotations

import pyarrow as pa

INSTANCE_COLUMNS = (
    "run_id", "instance_id", "raw_instance_id", "split", "sub_split", "perturbation",
    "input_text", "input_messages", "refs", "choices", "question_hash", "prompt_text", "cluster",
)
PREDICTION_COLUMNS = (
    "run_id", "instance_id", "train_trial_index", "output_text", "mapped_output", "thinking_text",
    "metrics", "annotations", "score", "is_correct", "infra_error", "error_message", "output_kind",
    "judge_notes", "finish_reason", "output_tokens", "verdict_note",
)
RUN_COLUMNS = (
    "run_id", "source_format", "source_path", "content_hash", "suite", "run_name", "model",
    "model_deployment", "model_metadata", "dataset", "domain", "method", "run_groups",
    "main_metric", "main_metric_source", "metric_max", "lower_is_better", "pass_threshold",
    "n_predictions", "n_failures", "n_infra_errors", "record_schema_version", "status",
    "dataset_raw", "scale_source", "main_split", "variant", "settings", "harness_metric",
    "harness_split", "harness_value", "harness_n", "harness_agrees", "harness_note", "instructions",
    "max_tokens", "metric_min", "headline_metric", "verdict_rule", "started_at", "harness_factor", "ingested_at",
)

# The runs columns that are not text, as the runs table declares them (store/migrations.py; its
# INTEGER counts staged as int64):
# stated, not inferred from the values (a column all NULL in one chunk of a load keeps its type,
# and pyarrow's inference would import pandas to look for pandas values among them)
RUN_TYPES = {
    **dict.fromkeys(("metric_max", "pass_threshold", "harness_value", "metric_min", "harness_factor"), pa.float64()),
    **dict.fromkeys(("lower_is_better", "harness_agrees"), pa.bool_()),
    **dict.fromkeys(("n_predictions", "n_failures", "n_infra_errors", "record_schema_version", "harness_n",
                     "max_tokens"), pa.int64()),
    "started_at": pa.timestamp("us"),
}

# The transcript_steps table without run_id (added when the run is staged), in column order.
STEP_SCHEMA = pa.schema([
    ("instance_id", pa.string()),
    ("train_trial_index", pa.int32()),
    ("step_index", pa.int32()),
    ("agent", pa.string()),
    ("role", pa.string()),
    ("kind", pa.string()),
    ("tool_name", pa.string()),
    ("tool_call_id", pa.string()),
    ("tool_arguments", pa.string()),
    ("text", pa.string()),
    ("text_chars", pa.int64()),
    ("error", pa.string()),
    ("input_tokens", pa.int64()),
    ("output_tokens", pa.int64()),
    ("started_at", pa.timestamp("us")),
    ("seconds", pa.float64()),
    ("model", pa.string()),
    ("finish_reason", pa.string()),
    ("span_id", pa.string()),
    ("parent_span_id", pa.string()),
    ("depth", pa.int32()),
    ("source_ref", pa.string()),
])
STEP_COLUMNS = tuple(STEP_SCHEMA.names)
# transcript_steps in column order: the run it belongs to, then a step's own columns
TRANSCRIPT_STEPS_SCHEMA = pa.schema([pa.field("run_id", pa.string()), *STEP_SCHEMA])
