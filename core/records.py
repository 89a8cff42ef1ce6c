"""The normalized records every reader produces, whatever the log format.

RECORD_SCHEMA_VERSION is stored on each run so that a store can tell which reader vintage wrote it
(3: predictions may carry their transcript, `StepRecord`s).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .verdicts import PassRule

RECORD_SCHEMA_VERSION = 3


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Reference(_Record):
    text: str
    correct: bool


class JudgeNote(_Record):
    """What a judge said about one prediction, in its own words: an LLM jury member per criterion
    (HELM annotations), a scorer's explanation (Inspect), an assertion's reason (promptfoo)."""

    judge: str | None = Field(None, description="who judged: annotator / scorer / assertion type")
    criterion: str | None = Field(None, description="what was judged (e.g. 'accuracy', 'completeness')")
    score: float | str | None = Field(None, description="the judge's own score, as it gave it")
    explanation: str | None = Field(None, description="the judge's written reason")


class InstanceRecord(_Record):
    instance_id: str = Field(description="stable within the dataset, the same for every model")
    raw_instance_id: str = Field(description="the id exactly as the log gives it")
    split: str | None = None
    sub_split: str | None = None
    perturbation: str | None = None
    input_text: str | None = None
    input_messages: list[dict[str, Any]] | None = None
    refs: list[Reference] = []
    choices: dict[str, str] | None = None
    question_hash: str | None = Field(None, description="hash of the normalized question text (choices only when carried), for pairing across harnesses whose ids differ")
    prompt_text: str | None = Field(None, description="the prompt exactly as the model saw it (instructions, examples, question), when the log has it")
    cluster: str | None = Field(None, description="questions that are not independent (one passage, one repository) share it; None: the question is its own")


class PredictionRecord(_Record):
    instance_id: str
    train_trial_index: int = 0
    output_text: str | None = None
    mapped_output: str | None = None
    thinking_text: str | None = None
    metrics: dict[str, float] = {}
    annotations: dict[str, Any] | None = None
    score: float | None = None
    is_correct: bool | None = None
    infra_error: bool = False
    error_message: str | None = None
    output_kind: str | None = Field(None, description="NULL: text the model generated; 'chosen option': a loglikelihood task's preferred choice; 'loglikelihood': a single-continuation loglikelihood verdict (no generated text)")
    judge_notes: list[JudgeNote] | None = Field(None, description="the judges' own words about this prediction")
    finish_reason: str | None = Field(None, description="why generation stopped, as the log gives it ('length': cut at max_tokens)")
    output_tokens: int | None = Field(None, description="tokens the model generated, when logged")
    verdict_note: str | None = Field(None, description="why this verdict is not the usual reading (e.g. a request the provider blocked that the harness still scored)")


# What a step of an agent's transcript is (docs/store.md, transcript_steps.kind).
STEP_KINDS = ("message", "tool call", "tool result", "error", "system event")
StepKind = Literal["message", "tool call", "tool result", "error", "system event"]


class StepRecord(_Record):
    """One step of a prediction's transcript: a message, a tool call the agent made, what the tool
    returned, an error, or a system event (a limit reached, context compacted, a sub-agent
    started). Readers build them through `ingest.transcript.Transcript`, which numbers them, cuts
    their text at the stated cap and keeps its full length."""

    instance_id: str
    train_trial_index: int = 0
    step_index: int = Field(ge=0, description="0-based position in the prediction's transcript, dense")
    agent: str | None = Field(None, description="the agent that acted, as the log names it (multi-agent logs, sub-agents); NULL: the log names none")
    role: str | None = Field(None, description="system, user, assistant, tool or environment")
    kind: StepKind
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: str | None = Field(None, description="the call's arguments as JSON, when whole (NULL when the text was cut)")
    text: str | None = Field(None, description="the step's text, cut at the cap")
    text_chars: int = Field(0, ge=0, description="the full text's length in characters (more than len(text) when cut)")
    error: str | None = Field(None, description="what went wrong at this step, as the log says (a tool's error, a sample error)")
    input_tokens: int | None = None
    output_tokens: int | None = None
    started_at: datetime | None = Field(None, description="when the step started, as logged (UTC)")
    seconds: float | None = Field(None, description="how long the step took (a model call, a tool run), as logged")
    model: str | None = Field(None, description="the model that generated this step, when the log says")
    finish_reason: str | None = None
    span_id: str | None = Field(None, description="the sub-agent or span the step ran in (NULL: top level)")
    parent_span_id: str | None = None
    depth: int = Field(0, ge=0, description="nesting: 0 top level, 1 inside a sub-agent, ...")
    source_ref: str | None = Field(None, description="where in the log the step came from (messages[3], events[12], history[4])")


class RunRecord(_Record):
    run_id: str
    source_format: str
    source_path: str
    content_hash: str
    suite: str | None = None
    run_name: str
    model: str
    model_deployment: str | None = None
    model_metadata: dict[str, Any] | None = None
    dataset: str = Field(description="canonical dataset name (harness prefixes stripped, aliases applied)")
    dataset_raw: str | None = Field(None, description="the dataset/task name exactly as the log gives it")
    domain: str | None = None
    method: str | None = None
    run_groups: list[str] | None = None
    main_metric: str | None = None
    main_metric_source: str | None = None
    metric_min: float | None = Field(None, description="the bottom of the main metric's scale (1 for 1–5 jury scores)")
    metric_max: float | None = None
    lower_is_better: bool | None = None
    pass_threshold: float | None = None
    scale_source: str | None = Field(None, description="where the scale came from: config, binary, registry, name rule, helm display name, helm jury metric, eee metric_config, token F1, inspect value_to_float")
    main_split: str | None = Field(None, description="the split the harness's headline number uses (HELM: the group's main_split)")
    variant: str | None = Field(None, description="settings that tell this run apart from other runs of the model on the dataset (e.g. '5-shot', 'filter=flexible-extract'); NULL when none")
    settings: dict[str, Any] | None = Field(None, description="the run's evaluation settings as read from the log (n_shot, filter, suite, harness, ...)")
    harness_metric: str | None = Field(None, description="the metric of the log's own aggregate")
    harness_split: str | None = None
    harness_value: float | None = Field(None, description="the log's own aggregate (HELM stats.json, lm-eval results, Inspect header), as the log prints it")
    harness_factor: float | None = Field(None, description="harness_value is this multiple of the scores' scale: 1, or 100 for a rate the log prints on 0–100 (NULL: not compared)")
    harness_n: int | None = Field(None, description="how many samples the log's aggregate counts")
    harness_agrees: bool | None = Field(None, description="Faultline's recomputed rate equals harness_value (NULL: the log has no aggregate)")
    harness_note: str | None = Field(None, description="how and why the recomputed rate differs, or how it was checked")
    headline_metric: str | None = Field(None, description="the metric the harness reports as its headline for the run (NULL: unknown); judging on another is a difference")
    verdict_rule: str | None = Field(None, description="the pass/fail rule in words, as the ingest summary prints it")
    status: str = Field("complete", description="complete, or the log's own word for an unfinished run (cancelled, error, started)")
    instructions: str | None = Field(None, description="the task's instructions as the harness gave them for every instance (HELM instructions and prefixes, a system message)")
    max_tokens: int | None = Field(None, description="the generation limit the harness set")
    started_at: datetime | None = Field(None, description="when the run was made, as the log says (UTC when it gives a zone): orders reruns")
    record_schema_version: int = RECORD_SCHEMA_VERSION


class Skipped(_Record):
    """Something a reader found but cannot analyse (e.g. text-to-image records); it reaches the summary."""

    path: str
    reason: str


class ParsedRun(BaseModel):
    """One run, fully read and validated, ready to be written in one transaction."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run: RunRecord
    instances: list[InstanceRecord]
    predictions: list[PredictionRecord]
    n_nonfinite: int = 0  # predictions whose score was NaN or infinite: unscored, and reported
    # the predictions' transcripts, when the log holds them (agent logs): ingest.transcript.Transcript
    steps: Any = None
    rule: PassRule | None = None  # how the run was judged; a pending rule is resolved at load
    # what the reader did that the user should hear about (e.g. repeated predictions stored once)
    notes: list[str] = []

    @property
    def n_failures(self) -> int:
        return sum(1 for p in self.predictions if p.is_correct is False)

    @property
    def n_unscored(self) -> int:
        """Predictions with no verdict that are not failed requests (e.g. a trajectory the log does not judge)."""
        return sum(1 for p in self.predictions if p.is_correct is None and not p.infra_error)

    @property
    def n_infra_errors(self) -> int:
        return sum(1 for p in self.predictions if p.infra_error)
