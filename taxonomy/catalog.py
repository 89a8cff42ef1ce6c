"""Taxonomies as data: the shipped `erroratlas-v1` (plain answers), `erroratlas-agents-v1` (agent
transcripts: ErrorAtlas's categories and agent error types) and user files (YAML or JSON) with
their own version."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import yaml

from store import FaultlineError
from store.analysis import NO_MODEL_ERROR

DATA_DIR = Path(__file__).resolve().parent / "data"
BUILTIN_VERSION = "erroratlas-v1"
# the version agent transcripts are classified under (plain answers stay under BUILTIN_VERSION)
AGENT_VERSION = "erroratlas-agents-v1"
SHIPPED = (BUILTIN_VERSION, AGENT_VERSION)
OTHER = "Other"
HARD = "Hard to Analyze"
NO_ERROR = NO_MODEL_ERROR  # an analysis that found the failure is not the model's fault
# an agent run that failed because its environment did (agent taxonomy): not the model's fault
ENVIRONMENT = "Environment Failure"
# Labels that are not error types: counted and shown apart, never tested as a model's error type.
NOT_ERROR_TYPES = (OTHER, HARD, NO_ERROR, ENVIRONMENT)


class TaxonomyError(FaultlineError):
    """A taxonomy file that cannot be read or does not describe a valid taxonomy."""


@dataclass(frozen=True)
class Category:
    name: str
    description: str


@dataclass(frozen=True)
class Taxonomy:
    version: str
    name: str
    categories: tuple[Category, ...]
    source: str

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.categories]

    def canonical(self, answer: str) -> str | None:
        """The category an answer names (case and spacing forgiven), or None if it names none."""
        key = " ".join(str(answer).split()).casefold()
        for c in self.categories:
            if c.name.casefold() == key:
                return c.name
        return None

    def categories_json(self) -> str:
        return json.dumps([{"name": c.name, "description": c.description} for c in self.categories])


def _parse(data: object, source: str) -> Taxonomy:
    if not isinstance(data, dict):
        raise TaxonomyError(f"{source}: a taxonomy must be a mapping with `version` and `categories`")
    version = data.get("version")
    if not isinstance(version, str) or not version.strip():
        raise TaxonomyError(f"{source}: missing `version` (a non-empty string such as 'my-taxonomy-v1')")
    cats = data.get("categories")
    if not isinstance(cats, list) or not cats:
        raise TaxonomyError(f"{source}: `categories` must be a non-empty list")
    parsed: list[Category] = []
    seen: set[str] = set()
    for i, c in enumerate(cats, start=1):
        if isinstance(c, str):
            c = {"name": c, "description": ""}
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not c["name"].strip():
            raise TaxonomyError(f"{source}: category #{i} needs a `name`")
        name = " ".join(c["name"].split())
        if name.casefold() in seen:
            raise TaxonomyError(f"{source}: category {name!r} appears twice")
        seen.add(name.casefold())
        parsed.append(Category(name, str(c.get("description") or "")))
    # every taxonomy needs the fallback stage 3 uses when no answer can be obtained
    if OTHER.casefold() not in seen:
        parsed.append(Category(OTHER, "no category fits"))
    return Taxonomy(version.strip(), str(data.get("name") or version), tuple(parsed), source)


def shipped(version: str = BUILTIN_VERSION) -> Taxonomy:
    """A taxonomy shipped with Faultline (SHIPPED), by version."""
    if version not in SHIPPED:
        raise TaxonomyError(f"{version!r} is not a shipped taxonomy ({', '.join(SHIPPED)})")
    return _parse(yaml.safe_load((DATA_DIR / f"{version}.yaml").read_text(encoding="utf-8")), "builtin")


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """The shipped taxonomy for plain answers (no path) or one read from a YAML/JSON file."""
    if path is None:
        return shipped(BUILTIN_VERSION)
    from ingest.errors import IngestError
    from ingest.files import read_capped
    from ingest.jsonio import parse_json

    p = Path(path)
    if not p.exists():
        raise TaxonomyError(f"{p}: taxonomy file not found")
    try:
        raw = read_capped(p)  # a regular file only, within the size cap
        data = parse_json(raw, p) if p.suffix.lower() == ".json" else yaml.safe_load(raw.decode("utf-8"))
    except IngestError as exc:
        raise TaxonomyError(exc.message) from None
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TaxonomyError(f"{p}: not valid YAML: {exc}") from None
    except RecursionError:
        raise TaxonomyError(f"{p}: nested too deeply to read") from None
    tax = _parse(data, str(p))
    if tax.version in SHIPPED and tax.categories != shipped(tax.version).categories:
        raise TaxonomyError(
            f"{p}: version {tax.version!r} is a shipped taxonomy and never changes; "
            "give your taxonomy its own version"
        )
    return tax
