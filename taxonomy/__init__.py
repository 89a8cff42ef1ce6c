"""Failure analysis: the versioned taxonomy, stage-1 analysts (LLM and offline), batched stage-3
classification of error titles, the LLM call layer (cache, cost, retries, concurrency), judge
agreement, the discovery of new error types and the verification of analyses by a second LLM.

Public API:
    analyze(db, analyst, ...)            choose failures, analyse them, classify their titles (a failed
                                         agent transcript: its first decisive error step, taxonomy/transcripts.py)
    LLMSettings(api_base=..., ...)       how a run calls its LLMs (taxonomy/settings.py): the `settings=` of
                                         analyze, verify, classify_titles, discover and adopt; defaults as the CLI's
    classify_titles(titles, classifier)  title → category
    load_taxonomy(path=None)             the shipped erroratlas-v1 or a custom YAML/JSON file
    adopt(db, analyst, names, ...)       add discovered candidates as a new taxonomy version; stage 3 only
    cluster_titles(titles)               (title, cluster name) pairs, no database
    taxonomy.agreement.agreement(db, analyst, against, gold)  an analyst vs reviews, a gold file or another analyst
    taxonomy.discover.discover(db, analyst, all_failures)     candidate new categories from the titles under Other
                                                              (offline: and the titles in a judge's own words)
    taxonomy.verify.verify(db, verifier, analyst=..., sample=...)  a second LLM's verdicts on the analyses, acceptance rate
    taxonomy.labels.load_labels(paths, db)  people's labels of agent failures (Who&When) as reviews
(the last three keep their module's name, so `taxonomy.agreement` / `taxonomy.discover` / `taxonomy.verify` stay the modules)
"""

from .agreement import AgreementError
from .analyze import Summary, analyze, classify_titles
from .catalog import (AGENT_VERSION, BUILTIN_VERSION, ENVIRONMENT, HARD, NO_ERROR, NOT_ERROR_TYPES, OTHER, Taxonomy,
                      TaxonomyError, load_taxonomy)
from .discover import DiscoveryError, adopt, cluster_titles
from .settings import LLMSettings

__all__ = [
    "AGENT_VERSION",
    "AgreementError",
    "BUILTIN_VERSION",
    "DiscoveryError",
    "ENVIRONMENT",
    "HARD",
    "LLMSettings",
    "NO_ERROR",
    "NOT_ERROR_TYPES",
    "OTHER",
    "Summary",
    "Taxonomy",
    "TaxonomyError",
    "adopt",
    "analyze",
    "classify_titles",
    "cluster_titles",
    "load_taxonomy",
]
