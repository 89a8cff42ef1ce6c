"""Every statement about LLM batches (migration 015): submissions recorded before the provider
creates them, and a batch's answers, call records and status written in one transaction."""

from __future__ import annotations

import json

import duckdb

from core.schema import LLM_BATCH_COLUMNS, LLM_CALL_COLUMNS

from .analysis import Batch, _insert, _insert_batch, now
from .writes import insert_row

SUBMITTING, SUBMITTED, COLLECTED = "submitting", "submitted", "collected"


def pending_batches(con: duckdb.DuckDBPyConnection) -> list[dict]:
    """Submissions not collected yet, oldest first: `requests` parsed."""
    cols = (*LLM_BATCH_COLUMNS, "batch_id")
    rows = con.execute(
        f"SELECT {', '.join(cols)} FROM llm_batches WHERE status <> ? ORDER BY submitted_at, submission_id",
        [COLLECTED],
    ).fetchall()
    out = []
    for row in rows:
        rec = dict(zip(cols, row))
        rec["requests"] = json.loads(rec["requests"])
        out.append(rec)
    return out


def record_submission(con: duckdb.DuckDBPyConnection, submission_id: str, input_file_id: str, model: str,
                      provider: str, api_base: str | None, requests: list[dict], reserved_usd: float | None) -> None:
    con.execute(
        insert_row("llm_batches", LLM_BATCH_COLUMNS),
        [submission_id, input_file_id, model, provider, api_base, json.dumps(requests), len(requests),
         reserved_usd, SUBMITTING, now()],
    )


def mark_submitted(con: duckdb.DuckDBPyConnection, submission_id: str, batch_id: str) -> None:
    con.execute("UPDATE llm_batches SET batch_id = ?, status = ? WHERE submission_id = ?",
                [batch_id, SUBMITTED, submission_id])


def forget_submission(con: duckdb.DuckDBPyConnection, submission_id: str) -> None:
    """The provider refused to create the batch: nothing was submitted."""
    con.execute("DELETE FROM llm_batches WHERE submission_id = ? AND batch_id IS NULL", [submission_id])


def save_collection(con: duckdb.DuckDBPyConnection, submission_id: str, batch_id: str, provider_status: str,
                    cache: list[tuple], calls: list[tuple], cost_usd: float | None) -> bool:
    """A finished batch's valid answers (cache rows), one llm_calls row per line (the `calls`
    tuples as Batch.calls, with batch_id added here) and its status, together. Returns False when
    another process collected it first (nothing is written twice)."""
    con.execute("BEGIN")
    try:
        status = next(iter(con.execute("SELECT status FROM llm_batches WHERE submission_id = ?", [submission_id]).fetchall()), None)
        if status is None or status[0] == COLLECTED:
            con.execute("ROLLBACK")
            return False
        ts = now()
        _insert_batch(con, Batch(cache=cache), ts)
        _insert(
            con,
            f"INSERT INTO llm_calls ({', '.join(LLM_CALL_COLUMNS)}, batch_id)",
            [(*c, batch_id) for c in calls],
        )
        con.execute(
            "UPDATE llm_batches SET status = ?, provider_status = ?, collected_at = ?, cost_usd = ? WHERE submission_id = ?",
            [COLLECTED, provider_status, ts, cost_usd, submission_id],
        )
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return True
