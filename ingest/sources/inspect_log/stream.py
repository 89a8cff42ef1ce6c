"""Reading one Inspect sample from an `.eval` archive without holding it whole.

A sample member can be hundreds of megabytes: every model call repeats the conversation so far
and carries the raw request, and long texts sit in `attachments` at the end of the file. Members
up to STREAM_MEMBER_BYTES are parsed whole (fast); larger ones are read twice as a stream of JSON
tokens (ijson): first everything but the attachments — each event turned into steps as soon as
it is complete, then dropped — and then only the attachments those steps and the sample's own
fields refer to. Memory then follows the number of steps and the size of what is kept (texts cut
at the step cap), not the size of the member.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

from ...errors import IngestError
from ...limits import ArchiveReader, MiB
from .steps import ATTACHMENT, SampleSteps

STREAM_MEMBER_BYTES = 64 * MiB


class _Hashing:
    """A binary stream that feeds what it reads to a hasher (the run's content hash)."""

    def __init__(self, raw, hasher: "hashlib._Hash | None") -> None:
        self.raw, self.hasher = raw, hasher

    def read(self, n: int = -1) -> bytes:
        chunk = self.raw.read(n)
        if self.hasher is not None:
            self.hasher.update(chunk)
        return chunk


def stream_sample(archive: ArchiveReader, name: str, where: str, hasher: "hashlib._Hash", cap: int,
                  keep: Callable[[dict], dict]) -> tuple[dict, SampleSteps, Callable[[str], str | None], dict[str, int]]:
    """(the sample's kept fields, its steps, a resolver of attachment references, the full length
    of each attachment cut at the cap). `keep` picks the fields to keep from the sample's
    top-level values (events and attachments never reach it)."""
    import ijson

    hasher.update(name.encode())
    steps = SampleSteps(cap)
    try:
        with archive.stream(name) as raw:
            sample = _first_pass(ijson, _Hashing(raw, hasher), where, steps)
    except ijson.JSONError as exc:
        raise IngestError(f"{where}: not valid JSON ({exc})") from None
    steps.messages(sample.get("messages"), f"{where}: messages", trailing_only=steps.saw_events)
    steps.ending(sample.get("error"), sample.get("limit"), where)
    kept = keep(sample)
    del sample
    wanted = set(steps.refs)
    fields_refs = _refs(kept)
    wanted |= fields_refs
    texts: dict[str, str] = {}
    lengths: dict[str, int] = {}
    if wanted:
        try:
            # read again: the first pass counted these bytes against the archive's cap already
            with archive.archive.open(name) as raw:
                for key, value in ijson.kvitems(raw, "attachments"):
                    if key in wanted and isinstance(value, str):
                        if key not in fields_refs and len(value) > cap:
                            lengths[key] = len(value)
                            value = value[:cap]
                        texts[key] = value
        except ijson.JSONError as exc:
            raise IngestError(f"{where}: not valid JSON ({exc})") from None
    return kept, steps, texts.get, lengths


def _first_pass(ijson, stream, where: str, steps: SampleSteps) -> dict:
    """The sample's top-level values but events (each handed to `steps` as it completes) and
    attachments (skipped)."""
    from ijson.common import ObjectBuilder

    sample: dict[str, Any] = {}
    depth, key, mode, builder, n = 0, None, None, None, 0
    for prefix, event, value in ijson.parse(stream, use_float=True):
        if event in ("start_map", "start_array"):
            depth += 1
            if depth == 1:
                if event != "start_map":
                    raise IngestError(f"{where}: expected a sample object, found an array")
            elif depth == 2:
                mode = "events" if key == "events" and event == "start_array" else "skip" if key == "attachments" else "build"
                if mode == "build":
                    builder = ObjectBuilder()
                    builder.event(event, value)
            elif depth == 3 and mode == "events":
                builder = ObjectBuilder()
                builder.event(event, value)
            elif builder is not None:
                builder.event(event, value)
        elif event in ("end_map", "end_array"):
            depth -= 1
            if depth == 1:
                if mode == "build":
                    builder.event(event, value)
                    sample[key] = builder.value
                builder, mode = None, None
            elif depth == 2 and mode == "events":
                builder.event(event, value)
                steps.event(builder.value, f"{where}: events[{n}]")
                n += 1
                builder = None
            elif builder is not None:
                builder.event(event, value)
        elif depth == 1:
            if event == "map_key":
                key = value
            else:
                sample[key] = value
        elif depth == 0:
            raise IngestError(f"{where}: expected a sample object, found a single value")
        elif builder is not None:
            builder.event(event, value)
    return sample


def _refs(value: Any) -> set[str]:
    found, stack = set(), [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.startswith(ATTACHMENT):
                found.add(item[len(ATTACHMENT):])
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found
