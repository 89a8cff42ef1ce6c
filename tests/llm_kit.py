"""The LLM analyst against the loopback server of llm_server.py (the fixture `fake_llm` of
conftest.py): the models it answers for, an analysis run against it, and a store of failures
with distinct prompts."""

from __future__ import annotations

from seed_store import seed

from taxonomy import LLMSettings, analyze

MODEL = "openai/test-model"
PRICED = "openai/gpt-4o-mini"  # litellm prices it; the loopback server answers for it


def run(db, srv, model=MODEL, *, classifier=None, models=(), taxonomy_file=None, **settings):
    """`analyze` against the fake server; the other keywords are LLMSettings fields."""
    settings = {"api_base": srv.api_base, "concurrency": 4, "timeout": 1.0, "backoff_s": 0.01, **settings}
    return analyze(db, model, classifier=classifier, models=models, taxonomy_file=taxonomy_file,
                   settings=LLMSettings(**settings))


def seeded(db, n: int) -> None:
    """n failures of one model, every one a distinct prompt."""
    seed(db, [dict(model="acme/m1", dataset="qa", instance_id=f"q{i:03d}", is_correct=False,
                   output=f"wrong answer number {i}") for i in range(n)])
