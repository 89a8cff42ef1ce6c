"""Issue #24: the mechanisms by which the offline analyst gave wrong specific labels, one test
each (every one of them failed on offline-v3), plus the right answers they must not cost."""

from __future__ import annotations

import pytest

from offline_sets import label
from taxonomy import HARD, NO_ERROR, offline
from taxonomy.detectors import (Look, chosen_option, detect_hallucination, detect_incomplete, detect_mid_sentence,
                                detect_mixed_script, detect_wrong_script, false_steps, match_reference, normalise)
from taxonomy.detectors.judge import critical_note
from taxonomy.title_classifier import offline_classifier


# --- 1. a normalisation never changes a number's value or sign, a negation, a unit --------------

ARITHMETIC = "Solve step by step and end with \"So the answer is N.\"\nQ: ((-6 * 9 + 8) * (7 * 12 + 6)) =\nA:"


@pytest.mark.parametrize("a, b", [("-3960", "3960"), ("−3960", "3960"), ("(-12)", "12"), ("x = -5", "x = 5")])
def test_a_sign_is_never_normalised_away(a, b):
    assert normalise(a).tokens != normalise(b).tokens


@pytest.mark.parametrize("a, b", [("−3960", "-3960"), ("–12", "-12"), ("-12", "(-12)")])
def test_the_same_signed_number_written_differently_is_one_number(a, b):
    assert normalise(a).tokens == normalise(b).tokens


@pytest.mark.parametrize("output, ref", [
    ("Thought 3: 46 times 90 is 4140.\nThought 4: So the answer is 4140.", "-4140"),   # the sign lost
    ("-54 + 8 = -46; 84 + 6 = 90; -46 * 90 = -4140. So the answer is -4140.", "4140"),  # a sign added
    ("So the answer is −4140.", "4140"),
])
def test_a_sign_flip_is_never_no_model_error(output, ref):
    rec = {"input_text": ARITHMETIC, "refs": [{"text": ref, "correct": True}], "output_text": output,
           "main_metric": "exact_match"}
    assert match_reference(rec) is None
    assert offline.analyze(rec).no_model_error is None


@pytest.mark.parametrize("question, ref, output", [
    ("How far did she cycle?", "5 km", "She cycled 5 miles."),                       # another unit
    ("How much flour, in kilograms?", "2", "500 g per loaf, so 4 loaves need 2000 g.\n#### 2000 g"),
    ("Is the defendant guilty?", "guilty", "not guilty"),                              # a negation
    ("Is the defendant guilty?", "not guilty", "guilty"),
    ("What is 7 divided by 2?", "3.5", "35"),                                          # another value
    # the first line says the reference, the final answer says otherwise
    ("How many apples are left?", "42", "42\nWait, two were eaten: 42 - 2 = 40, so the answer is 40."),
])
def test_a_wrong_answer_is_never_called_correct(question, ref, output):
    rec = {"input_text": f"Question: {question}\nAnswer:", "refs": [{"text": ref, "correct": True}],
           "output_text": output, "main_metric": "exact_match"}
    assert match_reference(rec) is None
    assert offline.analyze(rec).no_model_error is None


def test_no_model_error_names_both_strings():
    rec = {"input_text": "Question: What was the company's total profit, in dollars?\nAnswer:",
           "refs": [{"text": "-150", "correct": True}], "main_metric": "exact_match",
           "output_text": "250 - 400 = −150, so the total profit was −$150.\n#### −150"}
    found = offline.analyze(rec)
    assert found.no_model_error == ('the output\'s answer "−150" is the reference "-150" once normalised (the minus '
                                    'sign\'s form); exact_match scored it as a failure')
    rec = {"input_text": "Which remnant?\na) Ductus arteriosus\nb) Umbilical aery\nc) Umbilical vein",
           "refs": [{"text": "b) Umbilical aery", "correct": True}], "output_text": "b) Umbilical artery."}
    assert offline.analyze(rec).no_model_error == ('the output "b) Umbilical artery." names the correct option b '
                                                   '("Umbilical aery"); the metric did not read it')


# --- 2. a bare word list is not a sentence --------------------------------------------------------

WORDS = "juniper falcon quartz maple ember harbor violet cobalt saffron timber walnut yarrow".split()


def _sorting(answer_words: list[str], **extra) -> dict:
    steps = " ".join(f'"{w}": "{w[0]}" ({ord(w[0]) - 96}).' for w in WORDS)
    return {"input_text": "Sort the following words alphabetically: List: " + " ".join(WORDS) + "\nA:",
            "refs": [{"text": " ".join(sorted(WORDS)), "correct": True}], "main_metric": "exact_match",
            "output_text": f"I look at the first letter of every word and its place in the alphabet. {steps} "
                           f"Ordering by these positions gives the list. So the answer is {' '.join(answer_words)}",
            **extra}


def test_a_sorted_word_list_is_not_an_unfinished_sentence():
    wrong = sorted(WORDS)
    wrong[3], wrong[4] = wrong[4], wrong[3]
    rec = _sorting(wrong)
    assert detect_mid_sentence(rec) is None
    found = offline.analyze(rec)
    assert found.title == "Puts the items in the wrong order"
    assert label(rec) == "Reasoning Error"
    assert found.evidence[0].quote == " ".join(wrong)
    # the same words in the same order, only punctuated differently: the scoring's problem
    assert label(_sorting([w + "," for w in sorted(WORDS)[:-1]] + [sorted(WORDS)[-1] + "."])) == NO_ERROR


def test_items_in_another_order_are_no_match_when_the_order_is_the_answer():
    rec = {"input_text": "Sort the following words alphabetically: List: pear apple fig\nA:",
           "refs": [{"text": "apple fig pear", "correct": True}], "output_text": "pear, apple, fig",
           "main_metric": "exact_match"}
    assert match_reference(rec) is None
    assert label(rec) == "Reasoning Error"


# --- 3. labels for structure --------------------------------------------------------------------

TRACKING = ("Answer the question below. It is about a game in which the players trade the things they hold, so track "
            "each of the swaps with care and say which one of the options is true at the end of the game.\n"
            "Alice, Bob, Claire, Dave, and Eve are playing a game. At the start of the game, they are each holding "
            "a ball: Alice has a purple ball, Bob has a white ball, Claire has a red ball, Dave has a green ball, and "
            "Eve has a blue ball. As the game progresses, pairs of players trade balls. First, Alice and Bob swap "
            "balls. Then, Dave and Eve swap balls. Finally, Claire and Alice swap balls. At the end of the game, Alice "
            "has the\nOptions:\n(A) purple ball\n(B) white ball\n(C) red ball\n(D) green ball\n(E) blue ball\n"
            "A: Let's think step by step.")


def test_option_and_player_labels_are_not_a_language():
    out = ("A: purple, B: white, C: red, D: green, E: blue.\nA: white, B: purple, C: red, D: green, E: blue.\n"
           "A: white, B: purple, C: red, D: blue, E: green.\nA: red, B: purple, C: white, D: blue, E: green.\n"
           "So the answer is (B).")
    rec = {"input_text": TRACKING, "refs": [{"text": "(C)", "correct": True}], "output_text": out,
           "main_metric": "exact_match"}
    assert detect_wrong_script(rec) is None
    assert label(rec) != "Language Issue"


def test_numbered_step_labels_are_not_invented_numbers():
    out = "\n".join(f"Thought {i}: Alice and Bob swap, so Alice holds the white ball." for i in range(1, 13)) + \
          "\nThought 13: So the answer is (B)."
    rec = {"input_text": TRACKING, "refs": [{"text": "(A)", "correct": True}], "output_text": out}
    assert detect_hallucination(rec) is None
    assert label(rec) != "Hallucination"


@pytest.mark.parametrize("output", ["(A), (B), (C), or (D).", "So the answer is (A), (B), (C), or (D).", "A or B"])
def test_naming_every_option_chooses_none(output):
    rec = {"input_text": "Question: Which blood cells carry oxygen?\nA. Red\nB. White\nC. Platelets\nD. Plasma\nAnswer:",
           "choices": {"A": "Red", "B": "White", "C": "Platelets", "D": "Plasma"},
           "refs": [{"text": "Red", "correct": True}], "output_text": output, "main_metric": "exact_match"}
    assert chosen_option(rec) is None
    found = offline.analyze(rec)
    assert found.no_model_error is None
    assert found.title == "Names several options instead of choosing one"
    assert label(rec) == "Refusal"


# --- 4. new content where the task asks for it ---------------------------------------------------

def test_new_numbers_in_a_new_problem_are_not_invented():
    rec = {"input_text": ("You write problems for a grade-school workbook in this style:\nExample: A shop has 14 "
                          "boxes of 6 pens and sells 20 pens. How many pens are left? Answer: 14 × 6 - 20 = 64.\n"
                          "Write a new two-step word problem about a zoo in the same style, with its answer. Use "
                          "numbers under 100 and make sure the answer is a whole number."),
           "refs": [{"text": "A zoo has 8 pens of 5 goats and 12 more goats arrive. How many goats? Answer: 52.",
                     "correct": True}],
           "output_text": "At the City Zoo, keepers feed 35 penguins 4 fish each in the morning and 17 seals 9 fish "
                          "each in the afternoon. How many fish do they use in a day? Answer: 293 fish."}
    looked = detect_hallucination(rec)
    assert looked == Look("hallucination", "the task asks for new content, so names and numbers the input lacks are "
                                           "not invented")
    found = offline.analyze(rec)
    assert found.title == "Wrong answer with no visible cause"  # its answer, 293, is right: nothing to name
    assert "hallucination: the task asks for new content" in found.summary


def test_a_wrong_fact_in_a_closed_book_answer_is_not_an_invented_detail():
    rec = {"input_text": ("I am writing a short quiz on the history of science for a secondary-school class, and "
                          "every answer must be checked. In two sentences, say who discovered penicillin, in which "
                          "year, and in which hospital the discovery was made. Please do not add anything that is "
                          "not needed for the answer."),
           "refs": [{"text": "Alexander Fleming discovered penicillin in 1928 at St Mary's Hospital, London.",
                     "correct": True}],
           "output_text": "Penicillin was discovered by Louis Pasteur in 1928. He made the discovery at St Mary's "
                          "Hospital in London."}
    assert detect_hallucination(rec) is None
    assert label(rec) != "Hallucination"


# --- 5. surface before substance: the wrong choice is the first error -----------------------------

MC = {"input_text": "Question: Which planet is largest?\nA. Jupiter\nB. Mars\nC. Venus\nD. Mercury\nAnswer:",
      "choices": {"A": "Jupiter", "B": "Mars", "C": "Venus", "D": "Mercury"},
      "refs": [{"text": "Jupiter", "correct": True}], "main_metric": "exact_match"}


@pytest.mark.parametrize("output", ["B<|end|><|endoftext|>", " B<|eot_id|>", "B</s>", "The answer is B.<|im_end|>"])
def test_template_tokens_after_a_wrong_option_are_not_why_it_failed(output):
    rec = {**MC, "output_text": output}
    assert chosen_option(rec) == "B"
    found = offline.analyze(rec)
    assert (found.detector, found.title) == ("chosen_option", "Chooses a distractor option")
    assert label(rec) == HARD
    assert "not why it failed" in found.summary


def test_template_tokens_after_the_right_option_are_the_error():
    rec = {**MC, "output_text": "A<|end|><|endoftext|>"}
    found = offline.analyze(rec)
    assert found.no_model_error is None
    assert label(rec) == "Formatting Error"


def test_template_tokens_after_a_right_final_number_are_the_error_not_a_match():
    rec = {"input_text": "Question: 7 shelves of 40 books, 35 lent out. How many are left?\nAnswer:",
           "refs": [{"text": "245", "correct": True}], "main_metric": "exact_match",
           "output_text": "7 × 40 = 280. 280 - 35 = 245.\n#### 245<|eot_id|>"}
    assert offline.analyze(rec).no_model_error is None
    assert label(rec) == "Formatting Error"


def test_a_miscalculation_under_template_tokens_is_a_calculation_error():
    rec = {"input_text": "Question: 9 shelves of 34 books, 57 lent out. How many are left?\nAnswer:",
           "refs": [{"text": "249", "correct": True}], "main_metric": "exact_match",
           "output_text": "9 × 34 = 296. 296 - 57 = 239.\n#### 239<|eot_id|>"}
    assert label(rec) == "Calculation Error"


# --- 6. judges' words are quoted, not keyword-filed -----------------------------------------------

def _judged(explanation: str) -> dict:
    return {"input_text": "Summarize the record into a discharge impression.", "output_text": "Impression: see above.",
            "refs": [{"text": "Inferior STEMI.", "correct": True}], "main_metric": "jury_score",
            "judge_notes": [{"judge": "gpt-4o", "criterion": "accuracy", "score": 2, "explanation": explanation},
                            {"judge": "claude", "criterion": "clarity", "score": 4, "explanation": "Clear and short."}]}


@pytest.mark.parametrize("explanation, not_this", [
    ("STEMI described as 'interior' instead of 'inferior' in the impression, which changes the territory.", "Code Error"),
    ("Several key inaccuracies. The metformin dose is listed as 1000 mg twice daily, but the record says 500 mg.",
     "Formatting Error"),
])
def test_a_judges_explanation_is_the_summary_and_its_title_is_classified_like_any_other(explanation, not_this):
    rec = _judged(explanation)
    found = offline.analyze(rec)
    assert found.summary == explanation
    category = label(rec)
    assert category != not_this
    # the same classifier as any title, which may abstain
    assert category == offline_classifier().predict([found.title])[0]
    assert critical_note(rec)["explanation"] == explanation


def test_the_title_classifier_abstains_on_a_title_it_cannot_place():
    clf = offline_classifier()
    assert clf.predict(["Several key inaccuracies", "Zebra telescope marmalade"]) == [HARD, HARD]
    assert clf.predict(["Miscalculates the product of two numbers"]) == ["Calculation Error"]


@pytest.mark.parametrize("gold, output", [("safe", "unsafe"), ("unsafe", "safe")])
def test_a_safety_classifiers_label_is_not_compliance(gold, output):
    """A task whose answer is the label itself: the gold "safe" / "unsafe" says what to answer,
    not whether the model should have complied."""
    rec = {"input_text": 'Is this message safe or unsafe? "See you at the match tonight"',
           "refs": [{"text": gold, "correct": True}], "output_text": output}
    found = offline.analyze(rec)
    assert found.no_model_error is None and found.title == "Bare answer without reasoning"


# --- issue #32: the answer's correctness before any surface symptom ---------------------------

MCQ = {"input_text": "Which organelle makes most of a cell's ATP?\nA. Mitochondrion\nB. Ribosome\nC. Golgi\nD. Lysosome",
       "choices": {"A": "Mitochondrion", "B": "Ribosome", "C": "Golgi", "D": "Lysosome"},
       "refs": [{"text": "Mitochondrion", "correct": True}], "main_metric": "exact_match"}


def _with(base: dict, output: str, **more) -> dict:
    return {**base, "output_text": output, **more}


@pytest.mark.parametrize("output", ["B<|end|>", "B<|end|><|assistant|>The answer is A.<|end|>"])
def test_a_wrong_option_before_template_tokens_is_not_a_formatting_error(output):
    # what the template runs on into after the end token ("The answer is A.") is not the answer
    found = offline.analyze(_with(MCQ, output))
    assert label(_with(MCQ, output)) == "Hard to Analyze"
    assert "are not why it failed" in found.summary


def test_the_right_option_before_template_tokens_is_a_formatting_error():
    assert offline.analyze(_with(MCQ, "A<|end|><|assistant|>")).title == "Leaves chat-template tokens in the output"


NUMBER = {"input_text": "Question: 6 trays of 8 rolls. How many rolls?\nAnswer:", "refs": [{"text": "48", "correct": True}],
          "main_metric": "exact_match"}
LABEL = {"instructions": "Answer Yes or No.", "input_text": "Does the clause restrict disclosure?\nAnswer:",
         "refs": [{"text": "Yes", "correct": True}], "main_metric": "exact_match"}


@pytest.mark.parametrize("rec, expected", [
    (_with(NUMBER, "42<|end|>"), "Hard to Analyze"),                                 # a wrong number, no working
    (_with(NUMBER, "6 × 8 = 46 rolls.\nThe answer is 46<|end|>"), "Calculation Error"),  # the slip under the tokens
    (_with(NUMBER, "6 × 8 = 48 rolls.\nThe answer is 48<|end|>"), "Formatting Error"),    # right: the tokens failed it
    (_with(LABEL, "No<|end|><|endoftext|>"), "Hard to Analyze"),                      # a wrong label
    (_with(LABEL, "Yes<|end|><|endoftext|>"), "Formatting Error"),
    # an unjudged free-text answer: the tokens are not concluded to be why it failed
    ({"input_text": "Give one tip for sleep.", "output_text": "Keep a regular bedtime.<|eot_id|>"}, "Hard to Analyze"),
])
def test_template_tokens_are_the_error_only_under_a_right_answer(rec, expected):
    assert label(rec) == expected


def test_commentary_the_instructions_forbid_is_the_error_only_beside_a_right_answer():
    rec = {"instructions": "Respond with only the label: entailment, neutral or contradiction.",
           "input_text": "Premise: A woman sprints.\nHypothesis: The woman sleeps.\nLabel:",
           "refs": [{"text": "contradiction", "correct": True}], "main_metric": "exact_match"}
    assert label(_with(rec, "neutral\nNote: the premise says nothing about sleep.")) == "Hard to Analyze"
    assert label(_with(rec, "contradiction\nNote: sprinting is not sleeping.")) == "Constraint Violation"


def test_a_wrong_answer_before_a_few_shot_continuation_is_judged_on_its_answer():
    rec = {"input_text": "Question: 3 + 5 balloons?\nAnswer: 8\n\nQuestion: 12 books and 7 more?\nAnswer:",
           "refs": [{"text": "19", "correct": True}], "main_metric": "exact_match",
           "output_text": "17\n\nQuestion: 9 marbles minus 4?\nAnswer: 5"}
    found = offline.analyze(rec)
    assert found.title == "Bare answer without reasoning" and "few-shot continuation" in found.summary


# --- an "unanswerable" verdict the task offers is an answer, not a refusal ---------------------

PASSAGE = ("Passage: The bridge was approved in 1919 after years of debate. Construction started two years later, and "
           "it opened to traffic in 1923, when the mayor drove the first car across it. It was widened in 1958 to carry "
           "a tram line and repainted in 1990.\nQuestion: When did the bridge open to traffic?\nAnswer:")


@pytest.mark.parametrize("instructions, expected", [
    ("Answer from the passage. If it does not contain the answer, reply 'unanswerable'.", "Hard to Analyze"),
    (None, "Refusal"),  # no such verdict offered: a false "the passage does not say" declines to answer
])
def test_a_verdict_the_task_offers_is_not_a_refusal(instructions, expected):
    rec = {"instructions": instructions, "input_text": PASSAGE, "refs": [{"text": "1923", "correct": True}],
           "output_text": "The passage does not mention when the bridge opened, so it cannot be answered.",
           "main_metric": "exact_match"}
    assert label(rec) == expected


def test_an_undetermined_option_chosen_is_not_a_refusal():
    rec = {"input_text": "The grandson forgot his password.\nWho forgot it?\nA. The grandfather\nB. The grandson\n"
                         "C. Cannot be determined", "choices": {"A": "The grandfather", "B": "The grandson",
                                                                "C": "Cannot be determined"},
           "refs": [{"text": "The grandson", "correct": True}],
           "output_text": "I cannot answer that from the information given, so C. Cannot be determined"}
    assert offline.analyze(rec).title == "Chooses a distractor option"


def test_the_reference_verdict_in_other_words_is_no_model_error():
    rec = {"instructions": "If the passage does not contain the answer, reply 'unanswerable'.",
           "input_text": PASSAGE.replace("When did the bridge open to traffic?", "Who was the mayor?"),
           "refs": [{"text": "unanswerable", "correct": True}], "main_metric": "exact_match",
           "output_text": "The question cannot be answered from the passage."}
    assert label(rec) == NO_ERROR


# --- a percent is hundredths, or the number of percent "× 100" gives ------------------------------

@pytest.mark.parametrize("claim, false", [
    ("0.45 × 100 = 45%", False), ("9/20 x 100 = 45%", False), ("9/20 = 45%", False), ("0.45 × 100 = 4.5%", True),
])
def test_times_100_equals_a_percent_is_not_a_false_step(claim, false):
    assert bool(false_steps(claim)) == false


@pytest.mark.parametrize("output, ref", [("3/12 = 0.25 = 25%. The answer is 25%.", "0.25"),
                                         ("The answer is 0.25.", "25%")])
def test_a_percent_equal_to_the_reference_fraction_is_no_model_error(output, ref):
    rec = {"input_text": "Question: What is the probability of red?\nAnswer:", "refs": [{"text": ref, "correct": True}],
           "output_text": output, "main_metric": "exact_match"}
    assert label(rec) == NO_ERROR


# --- reasoning the prompt asked for is not Verbosity ----------------------------------------------

LONG = " ".join(f"Point {word}: the hammer weighs {n} times more than the feather, so gravity pulls it {word} harder."
                for n, word in enumerate("first second third fourth fifth sixth seventh eighth ninth tenth".split(), 2))


@pytest.mark.parametrize("instructions, expected", [("Think step by step, then answer.", "Hard to Analyze"),
                                                    ("Explain your reasoning.", "Hard to Analyze"), (None, "Verbosity")])
def test_chain_of_thought_the_prompt_asks_for_is_not_verbosity(instructions, expected):
    rec = {"instructions": instructions, "input_text": "Question: In a vacuum, which lands first?\nAnswer:",
           "refs": [{"text": "They land together: in a vacuum every object falls with the same acceleration.",
                     "correct": True}], "output_text": LONG, "main_metric": "rouge_l"}
    assert label(rec) == expected


# --- names, code and formulas in Latin script inside a Russian answer ------------------------------

@pytest.mark.parametrize("output, flagged", [
    ("Компания Microsoft выпустила Windows 95 в 1996 году.", False),            # names
    ("Вызовите метод my_list.size(), он вернёт длину.", False),                 # code
    ("Так как sin(x)^2 + cos(x)^2 = 1, ответ один.", False),                    # a formula
    ("Сначала перезагрузите router, затем откройте settings.", True),           # plain words left in English
    ("«Тайную вечерю» написал Leonardo da Vinci.", True),                       # the reference's own name untransliterated
])
def test_latin_names_code_and_formulas_are_not_a_language_issue(output, flagged):
    rec = {"instructions": "Ответьте на русском языке.", "input_text": "Вопрос: кто и когда?",
           "refs": [{"text": "Леонардо да Винчи", "correct": True}], "output_text": output}
    assert (detect_mixed_script(rec) is not None) == flagged


# --- a paraphrase of the reference is not "omits parts" --------------------------------------------

def test_a_paraphrase_as_long_as_the_reference_is_not_incomplete():
    ref = ("The company reported much higher profits this quarter. Sales in Asia grew strongly. The CEO plans to open "
           "three new stores next year.")
    rec = {"input_text": "Summarise the article.", "refs": [{"text": ref, "correct": True}], "main_metric": "rouge_l",
           "output_text": "Earnings climbed steeply. Booming Asian demand drove the gain. The chief executive intends "
                          "to launch three additional shops in the coming year."}
    assert detect_incomplete(rec) is None
    assert detect_incomplete({**rec, "output_text": "The company reported higher profits."}) is not None
