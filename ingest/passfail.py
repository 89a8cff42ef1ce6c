"""Every verdict rule in one place: which metric decides pass/fail, its scale and direction, the
threshold, and the check of Faultline's rate against the harness's own aggregate.

Scale and direction come from the metric, never from one run's data: the user's config, then
METRICS (a table of common HELM / lm-eval / Inspect metrics), with direction from a HELM suite's
schema.json when it has one. A metric the table does not know gets its scale from its whole
column on the dataset — every model in the ingest — so the same score on the same dataset always
gets the same verdict (`column_rule`). Pass when the score reaches RELATIVE_THRESHOLD of the way
from the scale's bottom to its top; for lower-is-better metrics, when it stays at or below
1 - RELATIVE_THRESHOLD of the way. Non-finite scores (NaN, ±inf) are never judged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .errors import IngestError

FALLBACK_METRICS = (
    "exact_match",
    "quasi_exact_match",
    "final_number_exact_match",
    "math_equiv_chain_of_thought",
    "pass",
)
RELATIVE_THRESHOLD = 0.7

# Bookkeeping statistics every HELM run reports; never a task's score.
GENERIC_STATS = {
    "num_prompt_tokens", "num_output_tokens", "num_completion_tokens", "num_train_instances",
    "num_train_trials", "num_references", "num_bytes", "num_perplexity_tokens", "prompt_truncated",
    "inference_runtime", "inference_denoised_runtime", "inference_idealized_runtime",
    "batch_size", "training_co2_cost", "training_energy_cost", "logprob", "max_prob",
    "finish_reason_endoftext", "finish_reason_length", "finish_reason_stop",
    "finish_reason_unknown", "num_instances", "predicted_index",
}


@dataclass(frozen=True)
class MetricInfo:
    """What is known about a metric: its scale (None: read it from the data) and direction."""

    low: float | None
    high: float | None
    lower_is_better: bool = False
    binary: bool = False


_BINARY = MetricInfo(0.0, 1.0, binary=True)
_UNIT = MetricInfo(0.0, 1.0)
_PERCENT = MetricInfo(0.0, 100.0)
_JURY = MetricInfo(1.0, 5.0)
_ERROR = MetricInfo(None, None, lower_is_better=True)

# The shipped registry (docs/verdicts.md lists it). Names are matched
# case-insensitively, without an lm-eval `,filter` or a HELM `@sub_split` suffix.
METRICS: dict[str, MetricInfo] = {
    **dict.fromkeys((
        "exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match",
        "final_number_exact_match", "math_equiv", "math_equiv_chain_of_thought", "pass", "pass@1",
        "acc", "acc_norm", "acc_mutual_info", "mc1", "em", "accuracy", "correct", "contains",
        "match", "choice", "includes", "bleu_acc", "rouge1_acc", "rouge2_acc", "rougel_acc",
        "bleurt_acc", "ifeval_strict_accuracy", "prompt_level_strict_acc", "inst_level_strict_acc",
        "prompt_level_loose_acc", "inst_level_loose_acc", "chain_of_thought_correctness",
    ), _BINARY),
    **dict.fromkeys((
        "f1", "f1_score", "token_f1", "mc2", "rouge_1", "rouge_2", "rouge_l", "rouge1", "rouge2",
        "rougel", "rougelsum", "rouge1_max", "rouge2_max", "rougel_max", "bertscore",
        "bertscore-f", "bertscore-p", "bertscore-r", "bleu_1", "bleu_4", "meteor", "bleurt_max",
        "safety_score", "model_graded_fact", "model_graded_qa",
    ), _UNIT),
    **dict.fromkeys(("bleu", "bleu_max", "sacrebleu", "chrf", "chrf++"), _PERCENT),
    **dict.fromkeys(("ter",), MetricInfo(0.0, 100.0, lower_is_better=True)),
    **dict.fromkeys(("wer", "cer"), MetricInfo(0.0, 1.0, lower_is_better=True)),
    **dict.fromkeys((
        "helpfulness", "harmlessness", "understandability", "completeness", "conciseness",
        "coherence", "relevance", "fluency", "consistency", "faithfulness",
    ), _JURY),
    **dict.fromkeys((
        "mae", "rmse", "mse", "absolute_value_difference", "perplexity", "word_perplexity",
        "byte_perplexity", "bits_per_byte", "logprob_per_byte", "edit_distance", "distance",
        "longest_common_prefix_length", "brier_score",
    ), _ERROR),
}


def metric_key(name: str) -> str:
    """A metric's registry key: lower-case, without lm-eval's `,filter` or HELM's `@sub_split`."""
    return name.split(",", 1)[0].split("@", 1)[0].strip().lower()


def lookup(name: str | None) -> MetricInfo | None:
    if not name:
        return None
    key = metric_key(name)
    if key in METRICS:
        return METRICS[key]
    # accuracy-like names of HELM/lm-eval variants: quasi_exact_match_fr, rougeLsum_acc, ...
    if key.endswith("_acc") or "exact_match" in key or key.endswith("_accuracy"):
        return _BINARY
    return None


def is_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class DatasetOverride:
    metric: str | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class PassConfig:
    """User settings: per-dataset metric/threshold overrides ('*' for every dataset) and
    dataset-name aliases (raw name → canonical name), from flags and `--config`."""

    overrides: dict[str, DatasetOverride]
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "PassConfig":
        return cls({})

    def for_dataset(self, *names: str | None) -> DatasetOverride:
        """The override for the first of `names` (canonical name, then the log's own) that has one."""
        specific = next((self.overrides[n] for n in names if n and n in self.overrides), DatasetOverride())
        default = self.overrides.get("*", DatasetOverride())
        return DatasetOverride(
            metric=specific.metric or default.metric,
            threshold=specific.threshold if specific.threshold is not None else default.threshold,
        )

    @classmethod
    def build(
        cls,
        thresholds: Iterable[str] = (),
        metrics: Iterable[str] = (),
        config_file: str | Path | None = None,
    ) -> "PassConfig":
        """From `--pass-threshold [DATASET=]X`, `--main-metric [DATASET=]NAME`, `--config FILE`."""
        raw: dict[str, dict[str, Any]] = {}
        aliases: dict[str, str] = {}
        if config_file:
            raw, aliases = _load_config_file(Path(config_file))
        for item in thresholds:
            dataset, value = _split_assignment(item, "--pass-threshold")
            try:
                number = float(value)
            except ValueError:
                raise IngestError(f"--pass-threshold {item}: {value!r} is not a number") from None
            if not math.isfinite(number):
                raise IngestError(f"--pass-threshold {item}: {value!r} is not a finite number")
            raw.setdefault(dataset, {})["pass_threshold"] = number
        for item in metrics:
            dataset, value = _split_assignment(item, "--main-metric")
            raw.setdefault(dataset, {})["main_metric"] = value
        return cls(
            {
                ds: DatasetOverride(metric=v.get("main_metric"), threshold=v.get("pass_threshold"))
                for ds, v in raw.items()
            },
            aliases,
        )


def _split_assignment(item: str, flag: str) -> tuple[str, str]:
    if "=" in item:
        dataset, value = item.split("=", 1)
        if not dataset or not value:
            raise IngestError(f"{flag} {item}: expected DATASET=VALUE or VALUE")
        return dataset, value
    return "*", item


def _load_config_file(path: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    import yaml  # YAML is a superset of JSON, so one loader reads both

    from .files import read_capped

    if not path.exists():
        raise IngestError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(read_capped(path).decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise IngestError(f"{path}: not valid YAML/JSON: {exc}") from None
    except RecursionError:
        raise IngestError(f"{path}: nested too deeply to read") from None
    data = data if isinstance(data, dict) else {}
    datasets = data.get("datasets", {} if "aliases" in data else None)
    if not isinstance(datasets, dict):
        raise IngestError(
            f"{path}: expected a mapping `datasets: {{NAME: {{main_metric: ..., pass_threshold: ...}}}}` "
            "and/or `aliases: {NAME: CANONICAL_NAME}`"
        )
    out: dict[str, dict[str, Any]] = {}
    for name, spec in datasets.items():
        if not isinstance(spec, dict) or not set(spec) <= {"main_metric", "pass_threshold"}:
            raise IngestError(
                f"{path}: datasets.{name}: expected keys main_metric and/or pass_threshold"
            )
        threshold = spec.get("pass_threshold")
        if threshold is not None and (not isinstance(threshold, (int, float)) or not math.isfinite(threshold)):
            raise IngestError(f"{path}: datasets.{name}.pass_threshold: {threshold!r} is not a number")
        out[str(name)] = {k: v for k, v in spec.items() if v is not None}
    aliases = data.get("aliases") or {}
    if not isinstance(aliases, dict) or not all(isinstance(v, str) and v for v in aliases.values()):
        raise IngestError(f"{path}: aliases: expected a mapping NAME: CANONICAL_NAME")
    return out, {str(k): v for k, v in aliases.items()}


@dataclass(frozen=True)
class PassRule:
    """Where the line is for one run. threshold None: the scale is to be read from the dataset's
    whole column once every run of the ingest is parsed (`column_rule`)."""

    metric: str | None
    source: str
    low: float | None
    high: float | None
    lower_is_better: bool
    threshold: float | None
    scale_source: str
    binary: bool = False

    @property
    def pending(self) -> bool:
        return self.metric is not None and self.threshold is None

    def judge(self, score: float | None) -> bool | None:
        if self.threshold is None or not is_finite(score):
            return None
        return score <= self.threshold if self.lower_is_better else score >= self.threshold


def _threshold(low: float, high: float, lower_is_better: bool) -> float:
    share = 1 - RELATIVE_THRESHOLD if lower_is_better else RELATIVE_THRESHOLD
    return round(low + share * (high - low), 12)  # 0.3, not 0.30000000000000004, in the summary and store


def make_rule(
    metric: str | None,
    source: str,
    override: DatasetOverride,
    lower_is_better: bool | None = None,
    scale: tuple[float, float, str] | None = None,
) -> PassRule:
    """The rule for a run's metric. `lower_is_better` is the log's own word on direction (HELM
    schema, lm-eval higher_is_better), `scale` a scale the format itself defines (e.g. Inspect's
    C/I letters, a boolean column); otherwise the registry decides, else the dataset column."""
    info = lookup(metric)
    lower = lower_is_better if lower_is_better is not None else bool(info and info.lower_is_better)
    if scale is not None:
        low, high, scale_source = scale
        binary = (low, high) == (0.0, 1.0) and scale_source == "binary"
    elif info is not None and info.high is not None:
        low, high, scale_source, binary = info.low or 0.0, info.high, "registry", info.binary
    else:
        low = high = None
        scale_source, binary = "dataset column", False
    if override.threshold is not None:
        return PassRule(metric, source, low, high, lower, override.threshold, "config", binary)
    if high is None or metric is None:
        return PassRule(metric, source, None, None, lower, None, scale_source)
    return PassRule(metric, source, low, high, lower, _threshold(low, high, lower), scale_source, binary)


def column_scale(values_min: float, values_max: float, all_integers: bool) -> tuple[float, float]:
    """The scale of a metric the registry does not know, from its whole column on a dataset:
    0–1 for rates; an integer column of at most 10 is a rating scale from 1 (0 when a 0 occurs)
    to its highest value (1–3 human ratings); else 0 to the next of 5, 10, 100, or the column's max."""
    low = min(0.0, values_min)
    if values_max <= 1 and values_min >= 0:
        return 0.0, 1.0
    if all_integers and values_max <= 10 and values_min >= 0:
        return (1.0 if values_min >= 1 else 0.0), values_max
    for top in (5.0, 10.0, 100.0):
        if values_max <= top:
            return low, top
    return low, values_max


def column_rule(rule: PassRule, values_min: float | None, values_max: float | None, all_integers: bool) -> PassRule:
    """Resolve a pending rule with the dataset column's range (every model in the ingest)."""
    if values_min is None or values_max is None:
        return rule
    if rule.lower_is_better:
        # an error metric: the column's worst error sets the scale
        low, high = min(0.0, values_min), values_max
    else:
        low, high = column_scale(values_min, values_max, all_integers)
    if high <= low:
        high = low + 1.0
    return PassRule(rule.metric, rule.source, low, high, rule.lower_is_better, _threshold(low, high, rule.lower_is_better), "dataset column", False)


@dataclass(frozen=True)
class HarnessAggregate:
    """The log's own number for the run: what Faultline's recomputed rate is checked against."""

    metric: str
    split: str | None
    value: float | None
    n: int | None
    not_compared: str | None = None  # why it cannot be compared (e.g. a corpus-level aggregate)


def agreement(aggregate: HarnessAggregate | None, scores: list[float], n_logged: int) -> dict[str, Any]:
    """The RunRecord's harness_* fields: the aggregate and whether Faultline's rate equals it.

    The mean score is compared (what harnesses report; for a 0/1 metric it is the pass rate);
    `scores` are the finite main-metric scores of the run's samples in that split, and
    `n_logged` how many samples of that split the log holds."""
    if aggregate is None:
        return {}
    out: dict[str, Any] = {
        "harness_metric": aggregate.metric,
        "harness_split": aggregate.split,
        "harness_value": aggregate.value,
        "harness_n": aggregate.n,
    }
    if aggregate.not_compared or aggregate.value is None or not math.isfinite(aggregate.value):
        out["harness_note"] = f"not compared: {aggregate.not_compared or 'the aggregate is not a number'}"
        return out
    if not scores:
        out["harness_agrees"] = False
        out["harness_note"] = f"differs: no scored sample here, the log's aggregate is {aggregate.value:.6g}"
        return out
    binary = all(s in (0.0, 1.0) for s in scores)  # e.g. truthfulqa_mc2's `acc` is a probability per doc
    ours = sum(scores) / len(scores)
    where = f"{aggregate.metric}" + (f", split {aggregate.split}" if aggregate.split else "")
    mine = f"{ours:.6g} = {int(sum(scores))}/{len(scores)}" if binary else f"mean {ours:.6g} over {len(scores)}"
    tolerance = 1e-9 * max(1, len(scores), aggregate.n or 0)
    why = ""
    if aggregate.n is not None and aggregate.n != n_logged:
        why = f"; the log holds {n_logged} samples, its aggregate counts {aggregate.n}"
    elif len(scores) != n_logged:
        why = f"; {n_logged - len(scores)} of {n_logged} samples have no score"
    if abs(ours - aggregate.value) <= tolerance:
        out["harness_agrees"] = True
        out["harness_note"] = f"agrees: {mine} ({where}){why}"
        return out
    out["harness_agrees"] = False
    out["harness_note"] = (
        f"differs by {abs(ours - aggregate.value):.4g}: {mine} here, the log says {aggregate.value:.6g} ({where}){why}"
    )
    return out
