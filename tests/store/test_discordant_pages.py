"""store.queries.discordant_pages: both sides' pages of the questions only one model fails in one
pass over the pairs (the compare page's two tabs), each exactly `discordant`'s page of that side."""

from __future__ import annotations

import pytest

from store import queries as q
from store import read_connection
from tests.seed_store import seed


@pytest.fixture
def store_with_sides(tmp_db):
    rows = []
    for d in ("ds1", "ds2"):
        for i in range(70):
            # A fails q000-q039 where B passes; B fails q060-q069 where A passes; both fail q040-q044
            both_fail = 40 <= i < 45
            rows.append(dict(model="X", dataset=d, domain="dom", instance_id=f"q{i:03d}",
                             is_correct=i >= 45, title="wrong" if i < 45 else None,
                             category="Reasoning Error" if i < 45 else None))
            rows.append(dict(model="Y", dataset=d, domain="dom", instance_id=f"q{i:03d}",
                             is_correct=i < 60 and not both_fail))
    # asked by question text under other ids: paired by content, and A fails where B passes
    rows.append(dict(model="X", dataset="ds1", instance_id="x-only", is_correct=False, question_hash="h1"))
    rows.append(dict(model="Y", dataset="ds1", instance_id="y-only", is_correct=True, question_hash="h1"))
    seed(tmp_db, rows)
    return tmp_db


@pytest.mark.parametrize("limit, offset_a, offset_b", [(50, 0, 0), (50, 50, 0), (7, 14, 3), (50, 100, 50)])
def test_each_side_is_discordants_page_of_it(store_with_sides, limit, offset_a, offset_b):
    with read_connection(store_with_sides) as con:
        both = q.discordant_pages(con, "X", "Y", "offline", limit=limit, offset_a=offset_a, offset_b=offset_b)
        only_a = q.discordant(con, "X", "Y", "offline", limit=limit, offset=offset_a, which="only A fails")
        only_b = q.discordant(con, "X", "Y", "offline", limit=limit, offset=offset_b, which="only B fails")
    assert both.equals(only_a.vstack(only_b))
    # 81 questions only A fails (40 per dataset, one by its text), 20 only B fails
    assert only_a.height == max(0, min(limit, 81 - offset_a)) and only_b.height == max(0, min(limit, 20 - offset_b))
    assert set(both["which"]) <= {"only A fails", "only B fails"}


def test_a_page_past_the_end_is_empty_and_the_other_side_stays(store_with_sides):
    with read_connection(store_with_sides) as con:
        both = q.discordant_pages(con, "X", "Y", "offline", limit=50, offset_a=0, offset_b=50)
    assert both["which"].to_list() == ["only A fails"] * 50
    assert both["instance_id"].to_list()[:3] == ["q000", "q001", "q002"]
    assert both["category"].to_list()[:3] == ["Reasoning Error"] * 3
