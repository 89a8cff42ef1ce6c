"""New error types: cluster the error titles the taxonomy misses (stage 2 of the method, run on
what stage 3 filed under Other — and, for the offline analyst, on its titles in a judge's own
words too), name the clusters, and adopt them into a new taxonomy version.

Clustering (offline, deterministic): each unique title, with the summary of its first failure,
becomes TF-IDF features — word stems (first five letters, English stop words and generic error
words such as "wrong", "incorrect", "fails" removed, since every title has them and they say
nothing about *which* error) plus character 2–4-grams of the same cleaned text — clustered by
agglomerative clustering (cosine distance, complete linkage). The number of clusters is chosen
by silhouette: every k from 2 to min(20, titles − 1) is tried and the smallest k whose silhouette
is within 5% of the best wins (on a few dozen short titles the silhouette keeps rising as
clusters shrink to pairs, so the plain maximum over-splits).

Naming: offline, a cluster is named after what most of its members say — the phrase (by word
stem) the most titles share, when at least half share one, shown by the shortest title that says
it; otherwise its medoid title (the member closest to all others) — and described by that phrase
and its most frequent words; with an LLM analyst the clusters are named in batches of at
most 500 titles per call through the LLM call layer (cached, costed, retried like every call).

Adopting: the chosen candidates are added to the analyst's taxonomy as a new version
(`<base>+<hash>` or `--version`), recorded in `taxonomies`, and only stage 3 runs again: an LLM
analyst's titles are re-classified by the analyst under the new version; the offline analyst's
titles in an adopted cluster take the new category and all others keep their category. Stage-1
analyses are reused as they are — not one stage-1 request is sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import yaml
from pydantic import BaseModel, ValidationError

from store import FaultlineError, read_connection, resolve_db_path, write_session
from store.agreement import discovery_rows, taxonomy_categories
from store.analysis import Batch, cached_for_prompt, save_batch

from .catalog import OTHER, TaxonomyError
from .offline import is_specific
from .select import choose_analyst
from .settings import LLMSettings

DISCOVER_PROMPT_VERSION = "discover-v1"
TITLES_PER_CALL = 500
MAX_CLUSTERS = 20
SILHOUETTE_TOLERANCE = 0.95
# words every error title uses; they tell errors apart no better than "the" does
GENERIC_WORDS = frozenset(
    "wrong wrongly incorrect incorrectly error errors mistake mistakes fails fail failed failure instead "
    "gives give states state answer answers answered model response responds does doesn never not no "
    "makes make uses use using".split()
)


class DiscoveryError(FaultlineError):
    """Nothing to cluster, or a candidate to adopt that discovery did not propose."""


def _clean_words(text: str) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in ENGLISH_STOP_WORDS and w not in GENERIC_WORDS]


def _stems(text: str) -> list[str]:
    return [w[:5] for w in _clean_words(text)]


def _features(texts: list[str]):
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    words = TfidfVectorizer(analyzer=_stems, sublinear_tf=True).fit_transform(texts)
    cleaned = [" ".join(_clean_words(t)) for t in texts]
    chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True).fit_transform(cleaned)
    return normalize(hstack([words, chars]).tocsr()).toarray()


def cluster(texts: Sequence[str]) -> list[int]:
    """A cluster number per text (identical texts share one), the number of clusters chosen by silhouette."""
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.metrics import silhouette_score

    unique = list(dict.fromkeys(texts))
    if len(unique) <= 2:
        return [unique.index(t) for t in texts]
    x = _features(unique)
    if not x.any(axis=1).all():
        x[~x.any(axis=1), 0] = 1e-9  # a text of stop words only: give cosine distance a direction
    tried = []
    for k in range(2, min(MAX_CLUSTERS, len(unique) - 1) + 1):
        labels = AgglomerativeClustering(n_clusters=k, metric="cosine", linkage="complete").fit_predict(x)
        tried.append((silhouette_score(x, labels, metric="cosine"), k, labels))
    best = max(s for s, _, _ in tried)
    labels = next(lab for s, _, lab in tried if s >= SILHOUETTE_TOLERANCE * best)
    of = dict(zip(unique, labels))
    return [int(of[t]) for t in texts]


def medoid(texts: list[str]) -> str:
    """The member most similar to the others: a readable name for the cluster."""
    if len(texts) <= 2:
        return sorted(texts, key=len)[0]
    x = _features(texts)
    sims = x @ x.T
    return texts[int(sims.sum(axis=1).argmax())]


def describe(texts: list[str]) -> str:
    counts = Counter(w for t in texts for w in set(_clean_words(t)))
    return "titles about " + ", ".join(w for w, _ in counts.most_common(4))


def _words_with_stems(title: str) -> list[tuple[str, str]]:
    """(word as written, its stem) for the title's words that tell errors apart."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return [(w, w.lower()[:5]) for w in re.findall(r"[A-Za-z0-9][\w'-]*", title)
            if w.lower() not in ENGLISH_STOP_WORDS and w.lower() not in GENERIC_WORDS]


def _phrases(title: str) -> set[tuple[str, ...]]:
    stems = [s for _, s in _words_with_stems(title)]
    return {tuple(stems[i:i + n]) for n in range(1, 5) for i in range(len(stems) - n + 1)}


def _surface(title: str, phrase: tuple[str, ...]) -> str:
    """The title's own words that say `phrase`, verbatim (with the small words between them)."""
    pairs = _words_with_stems(title)
    stems = [s for _, s in pairs]
    for i in range(len(stems) - len(phrase) + 1):
        if tuple(stems[i:i + len(phrase)]) == phrase:
            first, last = pairs[i][0], pairs[i + len(phrase) - 1][0]
            start = title.index(first)
            return title[start:title.index(last, start) + len(last)]
    return " ".join(phrase)


def name_cluster(titles: list[str]) -> tuple[str, str]:
    """(name, description) of a cluster after what most of its members say: the phrase (1–4
    words, by stem) that the most titles share — the longest among equals — when at least half
    of them share it, named by the shortest title that says it; else the medoid title."""
    counts = Counter(p for t in titles for p in _phrases(t))
    if counts:
        best = max(counts, key=lambda p: (counts[p], len(p), p))
        k = counts[best]
        if k >= 2 and 2 * k >= len(titles):
            holders = [t for t in titles if best in _phrases(t)]
            name = min(holders, key=lambda t: (len(t.split()), t))
            return name, f"{k} of {len(titles)} titles say \"{_surface(name, best)}\"; {describe(titles)}"
    return medoid(titles), describe(titles)


@dataclass
class Candidate:
    name: str
    description: str
    titles: list[str]
    failures: list[dict] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.failures)

    def per_model(self) -> dict[str, int]:
        return dict(sorted(Counter(f["model"] for f in self.failures).items()))

    def examples(self, n: int = 3) -> list[str]:
        return [f"{f['dataset']}:{f['instance_id']} ({f['model']})" for f in self.failures[:n]]

    def as_json(self) -> dict:
        return {"name": self.name, "description": self.description, "size": self.size,
                "per_model": self.per_model(), "titles": self.titles, "examples": self.examples(5)}


@dataclass
class Discovery:
    analyst: str
    scope: str
    candidates: list[Candidate]
    unclustered: int
    base_version: str | None
    requests: int = 0


class _Named(BaseModel):
    cluster: int
    name: str
    description: str


class _Naming(BaseModel):
    clusters: list[_Named]


NAMING_SCHEMA = {
    "name": "name_clusters",
    "schema": {
        "type": "object",
        "properties": {"clusters": {"type": "array", "items": {
            "type": "object",
            "properties": {"cluster": {"type": "integer"}, "name": {"type": "string"}, "description": {"type": "string"}},
            "required": ["cluster", "name", "description"], "additionalProperties": False}}},
        "required": ["clusters"], "additionalProperties": False,
    },
}


def naming_messages(groups: list[tuple[int, list[str]]]) -> list[dict]:
    payload = json.dumps([{"cluster": i, "titles": titles} for i, titles in groups], ensure_ascii=False)
    return [
        {"role": "system", "content": (
            "You build an error taxonomy for LLM benchmark failures. Each group below holds error titles that an "
            "analyst wrote for failed answers and that no existing category fits. Give every group a short "
            "category name (2-5 words, naming the failed skill, like 'Calculation Error' or 'Unit Conversion "
            "Error') and a one-sentence description. Answer JSON: {\"clusters\": [{\"cluster\", \"name\", "
            "\"description\"}]}, one entry per group.")},
        {"role": "user", "content": f"GROUPS (JSON):\n{payload}"},
    ]


def _parse_naming(expected: set[int]):
    def parse(text: str):
        body = text.strip()
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", body, re.S)
        try:
            answer = _Naming.model_validate_json(fenced.group(1) if fenced else body)
        except ValidationError:
            return None
        got = {c.cluster: c for c in answer.clusters if c.name.strip()}
        return got if set(got) == expected else None
    return parse


def _batches(groups: list[tuple[int, list[str]]]) -> list[list[tuple[int, list[str]]]]:
    """Groups packed into calls of at most TITLES_PER_CALL titles (a group's titles are capped at 50)."""
    out, cur, n = [], [], 0
    for i, titles in groups:
        titles = titles[:50]
        if cur and n + len(titles) > TITLES_PER_CALL:
            out.append(cur)
            cur, n = [], 0
        cur.append((i, titles))
        n += len(titles)
    if cur:
        out.append(cur)
    return out


def name_with_llm(path, model: str, groups: list[tuple[int, list[str]]],
                  settings: LLMSettings = LLMSettings()) -> tuple[dict[int, tuple[str, str]], int]:
    """cluster → (name, description) from the LLM, and the number of requests sent."""
    from .journal import recover
    from .llm import LLMClient, Writer, gather_all
    from .runlock import run_lock

    names: dict[int, tuple[str, str]] = {}

    async def run() -> int:
        writer = Writer(path)
        client = LLMClient(model, writer, cached=cached, **settings.client_options())
        writer.start()

        async def one(batch):
            answer, _, cache_row = await client.request(
                naming_messages(batch), NAMING_SCHEMA, DISCOVER_PROMPT_VERSION, "discovery",
                _parse_naming({i for i, _ in batch}))
            if cache_row:
                writer.put(Batch(cache=[cache_row]))
            for i, named in answer.items():
                names[i] = (" ".join(named.name.split()), named.description.strip())

        try:
            await gather_all(one(b) for b in _batches(groups))
        finally:
            await writer.close()
        return client.stats.requests

    # as analyze and classify do: one LLM run per store, and answers an earlier run paid for but
    # could not store are stored before anything is sent
    with run_lock(path):
        recover(path)
        with write_session(path) as con:
            cached = cached_for_prompt(con, model, DISCOVER_PROMPT_VERSION)
        requests = asyncio.run(run())
    return names, requests


def discover(db=None, analyst: str | None = None, all_failures: bool = False, *,
             settings: LLMSettings = LLMSettings(), min_size: int = 2) -> Discovery:
    """Candidate categories from the clustered titles; an LLM analyst names the clusters, called as
    `settings` say (their batch API, prices and --max-cost do not apply here)."""
    path = resolve_db_path(db)
    if not path.exists():
        raise DiscoveryError(f"{path}: no database here yet; load logs with `python -m ingest PATH`")
    with read_connection(path) as con:
        analyst = choose_analyst(con, analyst, DiscoveryError)
        offline_specific = analyst == "offline" and not all_failures
        rows = discovery_rows(con, analyst, None if all_failures or offline_specific else OTHER)
    scope = "all failures" if all_failures else f"failures filed under {OTHER}"
    if offline_specific:
        # the offline analyst's fixed titles are already one group each; its titles in a judge's
        # own words are as varied as an LLM analyst's, whatever category they were filed under
        rows = [r for r in rows if r["category"] == OTHER or is_specific(r["error_title"])]
        scope = f"failures filed under {OTHER} or titled in a judge's words"
    versions = Counter(r["taxonomy_version"] for r in rows if r["taxonomy_version"])
    base = versions.most_common(1)[0][0] if versions else None
    summary_of: dict[str, str] = {}
    for r in rows:
        summary_of.setdefault(r["error_title"], r["error_summary"] or "")
    titles = list(summary_of)
    if not titles:
        return Discovery(analyst, scope, [], 0, base)
    labels = cluster([f"{t}. {summary_of[t]}" for t in titles])
    members: dict[int, list[str]] = {}
    for t, lab in zip(titles, labels):
        members.setdefault(lab, []).append(t)
    by_title: dict[str, list[dict]] = {}
    for r in rows:
        by_title.setdefault(r["error_title"], []).append(r)
    groups = sorted(members.items(), key=lambda kv: -sum(len(by_title[t]) for t in kv[1]))
    groups = [(i, ts) for i, ts in groups if sum(len(by_title[t]) for t in ts) >= min_size]
    requests = 0
    if analyst == "offline" or not groups:
        named = {i: name_cluster(ts) for i, ts in groups}
    else:
        named, requests = name_with_llm(path, analyst, groups, settings)
    candidates = []
    seen: Counter = Counter()
    for i, ts in groups:
        name, description = named[i]
        seen[name.casefold()] += 1
        if seen[name.casefold()] > 1:  # two clusters given one name stay apart
            name = f"{name} ({seen[name.casefold()]})"
        candidates.append(Candidate(name, description, ts, [f for t in ts for f in by_title[t]]))
    clustered = sum(c.size for c in candidates)
    return Discovery(analyst, scope, candidates, len(rows) - clustered, base, requests)


def cluster_titles(titles: list[str]) -> list[tuple[str, str]]:
    """(title, cluster name) for titles read from stdin; a cluster is named after what most of its titles say."""
    if not titles:
        return []
    labels = cluster(titles)
    members: dict[int, list[str]] = {}
    for t, lab in zip(titles, labels):
        members.setdefault(lab, [])
        if t not in members[lab]:
            members[lab].append(t)
    names = {lab: name_cluster(ts)[0] for lab, ts in members.items()}
    return [(t, names[lab]) for t, lab in zip(titles, labels)]


@dataclass
class Adoption:
    version: str
    base_version: str
    added: list[str]
    taxonomy_file: Path
    titles_reclassified: int
    classification_requests: int


def _new_version(base: str, added: list[Candidate]) -> str:
    digest = hashlib.sha256(json.dumps(sorted(c.name for c in added)).encode()).hexdigest()[:8]
    return f"{base}+discovered-{digest}"


def adopt(db=None, analyst: str | None = None, names: Sequence[str] = (), *, all_failures: bool = False,
          version: str | None = None, out: str | None = None, settings: LLMSettings = LLMSettings()) -> Adoption:
    """Add the named candidates to the analyst's taxonomy as a new version and run stage 3 again."""
    from .analyze import classify_titles, ensure_taxonomy
    from .catalog import load_taxonomy
    from .classify import offline_name

    found = discover(db, analyst, all_failures, settings=settings)
    by_name = {c.name.casefold(): c for c in found.candidates}
    missing = [n for n in names if n.casefold() not in by_name]
    if missing or not names:
        raise DiscoveryError(
            f"not a candidate of this discovery: {', '.join(missing) or '(none given)'}; the candidates are: "
            + ("; ".join(c.name for c in found.candidates) or "none"))
    chosen = [by_name[n.casefold()] for n in dict.fromkeys(names)]
    if found.base_version is None:
        raise DiscoveryError(f"the failures of {found.analyst} carry no taxonomy version to extend")
    path = resolve_db_path(db)
    with read_connection(path) as con:
        recorded = taxonomy_categories(con, found.base_version)
        base_rows = discovery_rows(con, found.analyst, None)
    every_title = sorted({r["error_title"] for r in base_rows})
    if recorded is None:
        raise DiscoveryError(f"taxonomy {found.base_version} is not recorded in {path}")
    base_cats = [c for c in json.loads(recorded[1]) if c["name"] != OTHER]
    taken = {c["name"].casefold() for c in base_cats}
    clash = [c.name for c in chosen if c.name.casefold() in taken]
    if clash:
        raise DiscoveryError(f"{', '.join(clash)}: already a category of {found.base_version}")
    new_version = version or _new_version(found.base_version, chosen)
    if new_version == found.base_version:
        raise TaxonomyError(f"{new_version} is the taxonomy being extended; a new version needs a new name")
    categories = base_cats + [{"name": c.name, "description": c.description} for c in chosen] + \
        [{"name": OTHER, "description": "no category fits"}]
    target = Path(out) if out else path.parent / f"{re.sub(r'[^A-Za-z0-9._+-]', '_', new_version)}.yaml"
    target.write_text(yaml.safe_dump({"version": new_version, "name": f"{recorded[0]} + {len(chosen)} discovered",
                                      "categories": categories}, sort_keys=False, allow_unicode=True), encoding="utf-8")
    tax = load_taxonomy(target)
    if found.analyst == "offline":
        # the offline classifier knows only erroratlas-v1: adopted clusters give their titles the
        # new category, every other title keeps the category it has
        cluster_of = {t: c.name for c in chosen for t in c.titles}
        current = {r["error_title"]: r["category"] for r in base_rows}
        classifier = f"{offline_name()}+{new_version}"
        rows = [(t, new_version, classifier, cluster_of.get(t, current.get(t) or OTHER), False, None) for t in every_title]
        with write_session(path) as con:
            ensure_taxonomy(con, tax)
            save_batch(con, Batch(classifications=rows))
        return Adoption(new_version, found.base_version, [c.name for c in chosen], target, len(rows), 0)
    with write_session(path) as con:
        ensure_taxonomy(con, tax)
    cats, summary = classify_titles(every_title, found.analyst, db=path, taxonomy_file=str(target), settings=settings)
    return Adoption(new_version, found.base_version, [c.name for c in chosen], target, len(cats), summary.stats.requests)
