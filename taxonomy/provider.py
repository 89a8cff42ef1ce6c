"""litellm, the one way to an LLM provider, imported on first use: it costs seconds of start-up
that a command never calling a model (and every page) should not pay."""

from __future__ import annotations

import os


def litellm():
    """The litellm module, set up once: the bundled cost map (no download), no debug banner,
    parameters a provider does not take dropped rather than refused."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm as lit

    # the OpenAI SDK imports its resource modules on the first request (about a second of CPU);
    # doing it here keeps that out of the first round of concurrent requests
    import openai.resources  # noqa: F401

    lit.suppress_debug_info = True
    lit.drop_params = True
    return lit
