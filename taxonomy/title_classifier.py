"""The offline stage-3 classifier: error title → taxonomy category, learnt from shipped seed titles.
It files the titles that come without a category: a judge's words the offline analyst quotes, an
LLM analyst's, any title given to `taxonomy classify`. (The offline detectors' fixed titles carry
their own category, `taxonomy.detectors.base.Title`.)

TF-IDF over word n-grams and character n-grams, plus counts of per-category cue stems
(data/cue_words.yaml), feed a linear SVM. Titles are short and vary in wording ("Miscomputes the
product", "Arithmetic slip"), so the character n-grams carry the stems that word features miss.
Its provenance string names the method and a hash of the seed and cue files, so classifications
made from different training data never share a cache entry.

It may abstain: a title that no category's one-vs-rest classifier comes near to claiming (every
decision score below ABSTAIN_BELOW: "Several key inaccuracies", a fragment of a judge's sentence),
or whose words the seed titles never use ("Zebra telescope marmalade"), is Hard to Analyze
rather than the least unlikely category. A wrong specific category is worse than none.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from .catalog import BUILTIN_VERSION, HARD, Taxonomy, TaxonomyError

SEED_FILE = Path(__file__).resolve().parent / "data" / "seed_titles.csv"
CUE_FILE = SEED_FILE.with_name("cue_words.yaml")
CUE_WEIGHT = 0.5
# v2: abstains (Hard to Analyze) when no category's decision score reaches ABSTAIN_BELOW, or when
# none of the title's words occurs in the seed titles
METHOD = "tfidf-cues-linearsvc-v2"
ABSTAIN_BELOW = -0.25


def load_seed(path: Path = SEED_FILE) -> list[tuple[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [(row["title"], row["category"]) for row in csv.DictReader(fh)]


@functools.lru_cache(maxsize=1)
def _cues() -> list[re.Pattern]:
    data = yaml.safe_load(CUE_FILE.read_text(encoding="utf-8"))
    return [re.compile("|".join(f"(?:{p})" for p in stems)) for stems in data.values()]


def cue_counts(titles):
    """One column per category: how many of its cue stems the title contains."""
    import numpy as np

    cues = _cues()
    return np.array(
        [[len(rx.findall(str(t).lower())) for rx in cues] for t in titles], dtype=float
    ) * CUE_WEIGHT


def _pipeline():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import make_pipeline, make_union
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.svm import LinearSVC

    features = make_union(
        TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True, lowercase=True),
        TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, lowercase=True),
        FunctionTransformer(cue_counts),
    )
    return make_pipeline(features, LinearSVC(C=0.5))


@dataclass
class TitleClassifier:
    name: str
    _model: object

    def predict(self, titles: list[str]) -> list[str]:
        """One category per title; Hard to Analyze where no category claims it."""
        if not titles:
            return []
        return _decide(self._model, titles)


def _decide(model, titles: list[str]) -> list[str]:
    scores = model.decision_function(titles)
    classes = model.classes_
    words = model.steps[0][1].transformer_list[0][1]  # the word n-gram TF-IDF
    known = words.transform(titles).getnnz(axis=1) > 0
    return [str(classes[row.argmax()]) if row.max() >= ABSTAIN_BELOW and k else HARD for row, k in zip(scores, known)]


@functools.lru_cache(maxsize=1)
def offline_classifier() -> TitleClassifier:
    """Trained once per process (well under a second on the seed set)."""
    seed = load_seed()
    digest = hashlib.sha256(SEED_FILE.read_bytes() + CUE_FILE.read_bytes()).hexdigest()[:10]
    model = _pipeline().fit([t for t, _ in seed], [c for _, c in seed])
    return TitleClassifier(f"offline/{METHOD}@{digest}", model)


def check_supports(taxonomy: Taxonomy) -> None:
    if taxonomy.version != BUILTIN_VERSION:
        raise TaxonomyError(
            f"the offline classifier is trained on {BUILTIN_VERSION} titles and cannot assign "
            f"categories of taxonomy {taxonomy.version!r}; use an LLM classifier (--classifier MODEL)"
        )


def held_out_accuracy(test_size: float = 0.25, seed: int = 7) -> tuple[float, int, int]:
    """On a stratified held-out split of the seed titles: the accuracy of the categories given
    (abstentions aside, unless the title's own category is Hard to Analyze), the split's size, and
    how many titles it abstained on."""
    from sklearn.model_selection import train_test_split

    rows = load_seed()
    titles = [t for t, _ in rows]
    labels = [c for _, c in rows]
    x_tr, x_te, y_tr, y_te = train_test_split(
        titles, labels, test_size=test_size, random_state=seed, stratify=labels
    )
    model = _pipeline().fit(x_tr, y_tr)
    pred = _decide(model, x_te)
    given = [(p, y) for p, y in zip(pred, y_te) if p != HARD or y == HARD]
    return sum(p == y for p, y in given) / len(given), len(y_te), len(y_te) - len(given)
