"""`shared_questions` (the compare page's default pair): how many questions each pair of models
both answered, counted from per-question model sets kept as 64-model bitmask words; beyond 64
models (two words) it equals a count over every pair by hand."""

from __future__ import annotations

import itertools

from seed_store import seed
from store import read_connection
from store import queries as q


def test_shared_questions_equal_a_count_by_hand_past_64_models(tmp_db):
    models = [f"m{n:03d}" for n in range(70)]
    # model n answers question i when i % (n % 7 + 1) == 0: every pair shares a different number
    answered = {m: {f"q{i}" for i in range(12) if i % (n % 7 + 1) == 0} for n, m in enumerate(models)}
    seed(tmp_db, [dict(model=m, dataset="d", instance_id=i, is_correct=True) for m in models for i in sorted(answered[m])])
    by_hand = sorted(((a, b, len(answered[a] & answered[b])) for a, b in itertools.combinations(models, 2)
                      if answered[a] & answered[b]), key=lambda r: (-r[2], r[0], r[1]))

    with read_connection(tmp_db) as con:
        shared = q.shared_questions(con)
        one_model = q.shared_questions(con, models=["m000"])

    assert shared.rows() == by_hand
    assert len(by_hand) == 70 * 69 // 2  # every pair shares q0
    assert shared.row(0) == ("m000", "m007", 12)  # n % 7 == 0 answers all twelve
    assert one_model.is_empty()
