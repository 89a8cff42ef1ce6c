"""Statistics for comparing models' failures: tests, the pairwise comparison, the HTML report."""

from .agents import agent_compare, agent_sides
from .compare import CategoryResult, Comparison, compare, pick_analyst, regressions, verdict
from .headline import accuracy_rows, dataset_rules, model_accuracy, unequal_questions
from .signatures import most_typed_model, signature
from core.significance import (ALPHA, bh, errormap_check, fisher, mcnemar_can_decide, mcnemar_exact,
                    share_difference_ci, wilson)

__all__ = [
    "ALPHA",
    "agent_compare",
    "agent_sides",
    "CategoryResult",
    "accuracy_rows",
    "dataset_rules",
    "Comparison",
    "bh",
    "compare",
    "errormap_check",
    "fisher",
    "mcnemar_can_decide",
    "mcnemar_exact",
    "model_accuracy",
    "most_typed_model",
    "pick_analyst",
    "regressions",
    "share_difference_ci",
    "signature",
    "unequal_questions",
    "verdict",
    "wilson",
]
