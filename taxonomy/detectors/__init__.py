"""Grounded offline detectors: each looks at one failure and returns a Finding or None.

One module per family of rules; `taxonomy.offline` runs them in order (first match wins).
"""

from .base import Evidence, Finding, Look
from .calculation import detect_calculation, false_steps
from .code import FENCE, detect_bad_code, detect_code_judged_wrong, detect_wrong_function
from .choice import (chosen_option, detect_bad_option, detect_chosen_distractor, detect_several_options, detect_wrong_option,
                     is_multiple_choice, named_options)
from .constraints import detect_constraint
from .content import brevity_request, detect_incomplete, detect_verbosity
from .echo import detect_prompt_echo
from .extraction import detect_data_extraction
from .grounding import detect_factual_error, detect_hallucination
from .instructions import (answer_is_wrong, answer_without_commentary, detect_extra_commentary, detect_mid_sentence, detect_template_tokens,
                           detect_token_limit, leftover_tokens)
from .judge import detect_judge_explanation, detect_performance_only
from .lists import detect_list_answer
from .language import detect_mixed_script, detect_translation_quality, detect_wrong_script, expected, target_language
from .normalise import contains_reference, normalise, same_form
from .shape import (answer_before_continuation, answer_before_tokens, asks_for_new_content, asks_for_order, is_grounded,
                    strip_template_tokens)
from .reference import (detect_no_answer_claim, detect_partial_answer, detect_reference_match, detect_retrieval_miss,
                        gives_no_answer_verdict, match_reference, offers_no_answer_verdict)

__all__ = [
    "FENCE",
    "answer_before_continuation",
    "answer_before_tokens",
    "answer_is_wrong",
    "answer_without_commentary",
    "Evidence",
    "Finding",
    "Look",
    "asks_for_new_content",
    "asks_for_order",
    "brevity_request",
    "chosen_option",
    "contains_reference",
    "detect_bad_code",
    "detect_bad_option",
    "detect_calculation",
    "detect_chosen_distractor",
    "detect_code_judged_wrong",
    "detect_constraint",
    "detect_data_extraction",
    "detect_extra_commentary",
    "detect_factual_error",
    "detect_hallucination",
    "detect_incomplete",
    "detect_judge_explanation",
    "detect_list_answer",
    "detect_mid_sentence",
    "detect_mixed_script",
    "detect_no_answer_claim",
    "detect_performance_only",
    "detect_partial_answer",
    "detect_prompt_echo",
    "detect_reference_match",
    "detect_retrieval_miss",
    "detect_several_options",
    "detect_template_tokens",
    "detect_token_limit",
    "detect_translation_quality",
    "detect_verbosity",
    "detect_wrong_function",
    "detect_wrong_option",
    "detect_wrong_script",
    "expected",
    "gives_no_answer_verdict",
    "false_steps",
    "is_grounded",
    "is_multiple_choice",
    "leftover_tokens",
    "match_reference",
    "named_options",
    "normalise",
    "offers_no_answer_verdict",
    "same_form",
    "strip_template_tokens",
    "target_language",
]
