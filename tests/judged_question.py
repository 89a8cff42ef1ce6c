"""One multiple-choice question two models answered, with the evidence a store keeps of it
(migration 009): the run's pass rule and instructions, the choices, and a judge's explanation.
Rows for `seed_store.seed`, shown by the instance view in the browser and in AppTest."""

from __future__ import annotations

EVIDENCE_RUN = {"main_metric": "exact_match", "pass_threshold": 0.7, "metric_min": 0.0, "metric_max": 1.0,
                "lower_is_better": False, "scale_source": "registry",
                "instructions": "Answer with the letter of the correct option."}
JUDGE_WORDS = "The answer names Lyon, which is not the capital of France."


def evidence_rows() -> list[dict]:
    """A multiple-choice question two models answered, with the evidence migration 009 keeps:
    the run's pass rule and instructions, the choices, and a judge's explanation."""
    common = dict(dataset="geo", domain="capitals", instance_id="q1", input="The capital of France?",
                  choices={"A": "Paris", "B": "Lyon"}, refs=[("Paris", True), ("Lyon", False)],
                  run=EVIDENCE_RUN, prompt_text="Answer with the letter.\nThe capital of France?\nA. Paris\nB. Lyon")
    return [
        dict(common, model="m-small", is_correct=False, output="B", mapped_output="Lyon", score=0.0,
             judge_notes=[{"judge": "gpt-4o", "criterion": "accuracy", "score": 1, "explanation": JUDGE_WORDS}],
             title="Picks a distractor", category="Factual Error"),
        dict(common, model="m-large", is_correct=True, output="A", mapped_output="Paris", score=1.0),
    ]
