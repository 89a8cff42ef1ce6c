"""The columns of the tables Faultline writes, declared once (store/migrations.py creates the
tables; tests/store/test_docs_schema.py holds these declarations to the migrated database): the
runs, instances, predictions and transcript_steps tables a load writes, with the Arrow schemas a
reader's transcript and the store's staging build; then the tables the analysis, reviews and
calibration write. Each tuple is the column order its inserts name (store/)."""

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


# The tables the analysis, reviews and calibration write, each as the columns its inserts name, in
# the order a row holds the values. A column left out is the table's own to fill (reviews.review_id
# and llm_calls.call_id from a sequence), one a later statement sets (llm_batches' batch_id,
# provider_status, collected_at, cost_usd), or created_at where the writer adds it to every row.

# taxonomies: each taxonomy version used, with its categories as JSON
TAXONOMY_COLUMNS = ("taxonomy_version", "name", "source", "categories", "created_at")
# llm_cache: one answer per prompt (created_at added when written); finish_reason only for an
# answer cut off at max_tokens
LLM_CACHE_COLUMNS = ("cache_key", "model", "prompt_version", "response_text", "prompt_tokens",
                     "completion_tokens", "finish_reason")
# llm_calls: one row per request, with its own time (so a journaled call can be recognised once
# stored); a call of a provider's batch goes on with its batch_id
LLM_CALL_COLUMNS = ("cache_key", "model", "purpose", "status", "http_status", "error", "prompt_tokens",
                    "completion_tokens", "cost_usd", "latency_ms", "created_at")
# llm_batches: a submission, recorded before the provider creates the batch
LLM_BATCH_COLUMNS = ("submission_id", "input_file_id", "model", "provider", "api_base", "requests",
                     "n_requests", "reserved_usd", "status", "submitted_at")
# analyses (created_at added when written): `no_model_error` is NULL for a model error, else why
# the failure is not the model's fault; `context_note` says what was cut to fit the analyst's
# context (NULL: nothing)
ANALYSIS_COLUMNS = (
    "run_id", "instance_id", "train_trial_index", "analyst", "prompt_version", "pair_hash",
    "error_title", "error_summary", "required_criteria", "cache_key", "no_model_error", "context_note",
)
# a transcript's analysis goes on with these (migration 021): the first decisive error's step,
# agent and quote, the transcript's length, the segments read, and the category the analyst chose
# itself with its taxonomy; a plain answer's row stops at context_note (they are NULL)
ANALYSIS_STEP_COLUMNS = ("step_index", "step_agent", "step_quote", "n_steps", "segments_read", "category",
                         "taxonomy_version")
# classifications: a title's category under a taxonomy version by one classifier (created_at
# added when written)
CLASSIFICATION_COLUMNS = ("error_title", "taxonomy_version", "classifier", "category", "is_fallback", "cache_key")
# verifications: a verdict of `taxonomy verify` on an analysis (created_at added when written)
VERIFICATION_COLUMNS = (
    "run_id", "instance_id", "train_trial_index", "analyst", "analysed_at", "verifier", "prompt_version",
    "accepted", "reason", "cache_key",
)
# failure_labels: per analysed prediction and analyst, its latest analysis and its category
FAILURE_LABEL_COLUMNS = ("run_id", "instance_id", "train_trial_index", "analyst", "error_title", "error_summary",
                         "analysed_at", "category", "taxonomy_version", "classifier", "no_model_error")
# latest_outcomes: the prediction that counts per model key, dataset and question (migration 014)
LATEST_OUTCOME_COLUMNS = ("model", "model_name", "variant", "dataset", "domain", "split", "is_main_split",
                          "instance_id", "question_hash", "run_id", "train_trial_index", "is_correct", "score")
# latest_labels: the label of each failed latest outcome, per analyst
LATEST_LABEL_COLUMNS = ("model", "model_name", "dataset", "domain", "split", "is_main_split", "instance_id",
                        "run_id", "train_trial_index", "analyst", "error_title", "category", "taxonomy_version",
                        "classifier", "score")
# reviews: a person's word on a label, or a label people made apart from any analyst
REVIEW_COLUMNS = ("run_id", "instance_id", "train_trial_index", "step_index", "agent", "category", "note",
                  "reviewer", "analyst", "action", "original_category", "created_at")
# review_samples: the failures drawn to measure an analyst against people, per stratum
REVIEW_SAMPLE_COLUMNS = ("sample_id", "analyst", "seed", "run_id", "instance_id", "train_trial_index", "stratum",
                         "stratum_size", "stratum_drawn", "created_at")
# calibrations: an analyst measured against people's reviews
CALIBRATION_COLUMNS = ("analyst", "taxonomy_version", "prompt_version", "reviews_hash", "n_reviews", "report",
                       "created_at")
