"""Grounded offline detectors: each looks at one failure and returns a Finding or None.

One module per family of rules; `taxonomy.offline` runs them in order (first match wins).
"""

from .base import Evidence, Finding
from .calculation import detect_calculation, false_steps
from .choice import chosen_option, detect_bad_option, detect_chosen_distractor, is_multiple_choice
from .constraints import detect_constraint
from .content import brevity_request, detect_incomplete, detect_verbosity
from .echo import detect_prompt_echo
from .extraction import detect_data_extraction
from .grounding import detect_factual_error, detect_hallucination
from .instructions import detect_extra_commentary, detect_mid_sentence, detect_template_tokens, detect_token_limit
from .judge import detect_judge_explanation
from .language import detect_mixed_script, detect_translation_quality, detect_wrong_script, expected, target_language
from .reference import detect_reference_match, match_reference, normalise

__all__ = [
    "Evidence",
    "Finding",
    "brevity_request",
    "chosen_option",
    "detect_bad_option",
    "detect_calculation",
    "detect_chosen_distractor",
    "detect_constraint",
    "detect_data_extraction",
    "detect_extra_commentary",
    "detect_factual_error",
    "detect_hallucination",
    "detect_incomplete",
    "detect_judge_explanation",
    "detect_mid_sentence",
    "detect_mixed_script",
    "detect_prompt_echo",
    "detect_reference_match",
    "detect_template_tokens",
    "detect_token_limit",
    "detect_translation_quality",
    "detect_verbosity",
    "detect_wrong_script",
    "expected",
    "false_steps",
    "is_multiple_choice",
    "match_reference",
    "normalise",
    "target_language",
]
