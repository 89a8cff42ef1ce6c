"""The Overview's leaderboard: which adjacent ranks the data can tell apart (stats/leaderboard.py).

Each dataset's chart colours the models by group (alternating colours, the group named at the
right); under it, folded, the adjacent tests the groups come from, each with its n, test, p, q and
the smallest difference it could have detected."""

from __future__ import annotations

import polars as pl
import streamlit as st

from stats import fmt
from stats.leaderboard import Ladder

from .tables import show_table
from .text import md


def groups(ladder: Ladder | None) -> dict[str, int] | None:
    """model → group for the chart; None when there is nothing to separate (fewer than 2 ranks)."""
    if ladder is None or len(ladder.rungs) < 2:
        return None
    return {r.model: r.group for r in ladder.rungs}


def _detectable(ladder: Ladder, mde: float | None) -> str:
    if mde is None:
        return "–"
    return fmt.pct(mde) if ladder.as_rate else fmt.number(mde)


def which_ranks_differ(ladder: Ladder | None) -> None:
    """Under a dataset's chart: its groups in one sentence."""
    if ladder is None or len(ladder.rungs) < 2:
        return
    n_groups = len(ladder.groups)
    separating = [s for s in ladder.steps if s.separates]
    sentence = (f"**Which ranks differ:** {fmt.plural(n_groups, 'group')} the data can tell apart"
                if n_groups > 1 else "**Which ranks differ:** none — the data cannot tell any adjacent ranks apart")
    if separating:
        sentence += " (steps: " + "; ".join(f"{md(s.a)} above {md(s.b)}" for s in separating) + ")"
    st.markdown(sentence + "; the adjacent tests are under the results table.")


def adjacent_tests(ladders: list[Ladder]) -> None:
    """Every ladder's adjacent tests, folded: n, test, p, q and what each could have detected."""
    shown = [x for x in ladders if len(x.rungs) >= 2]
    if not shown:
        return
    with st.expander(f"Which ranks differ: the adjacent tests of {fmt.plural(len(shown), 'dataset')}"):
        st.caption("Ranked by the harness's number. Each pair of adjacent models is tested on the questions "
                   "both answered — McNemar exact for pass/fail, Wilcoxon signed-rank for a score, the "
                   "cluster-robust paired t where questions are clustered (passages, repeated trials) — "
                   "with Benjamini–Hochberg across each dataset's ladder; a new group starts below a step "
                   "with q ≤ 0.05. Groups chain: models far apart within one group may still differ.")
        for ladder in shown:
            st.markdown(f"**{md(ladder.dataset)}**")
            rows = [{"above": s.a, "below": s.b, "questions both answered": s.n, "test": s.test or "not tested",
                     "clusters": s.clusters, "p": fmt.p_value(s.p) if s.p is not None else "–",
                     "q (BH, ladder)": fmt.p_value(s.q) if s.q is not None else "–",
                     "detectable (80% power)": _detectable(ladder, s.mde),
                     "separates": "yes" if s.separates else "no"} for s in ladder.steps]
            show_table(pl.DataFrame(rows, infer_schema_length=None), name=f"adjacent-{ladder.dataset}",
                       hide_index=True)
            for m, why in ladder.unranked:
                st.caption(f"Not ranked: {md(m)} ({md(why, 500)}).")
