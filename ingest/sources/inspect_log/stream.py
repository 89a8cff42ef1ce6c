"""Reading one Inspect sample from an `.eval` archive without holding it whole.

A sample member can be hundreds of megabytes: every model call repeats the conversation so far
and carries the raw request, and long texts sit in `attachments` at the end of the file. Members
up to STREAM_MEMBER_BYTES are parsed whole (fast); larger ones are read once, a chunk at a time:
a vectorised scan of the JSON's structure (structure.py) finds where each event and each other
top-level value begins and ends; orjson parses each event on its own (turned into steps, then
dropped) and each other top-level value; ijson's C parser reads the keys and scalars between
them and streams the attachments, keeping only those the steps and the sample's own fields
refer to (they come after the events in Inspect's layout). Memory then follows the number of
steps and the size of what is kept (texts cut at the step cap), not the size of the member.

A member this one pass cannot read as it is laid out (invalid JSON, numbers orjson refuses,
attachments before what refers to them, a top level that is not an object) is read again token
by token (`_token_by_token`: ijson's parse, then the attachments in a second pass), which gives
the same steps or the same error message as before, only slower.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import orjson

from ...errors import IngestError
from ...limits import ArchiveReader, MiB
from .steps import ATTACHMENT, SampleSteps
from .structure import StructureScan

STREAM_MEMBER_BYTES = 64 * MiB
CHUNK_BYTES = 4 * MiB


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
                  keep: Callable[[dict], dict]
                  ) -> tuple[dict, SampleSteps, Callable[[str], str | None], dict[str, int], "hashlib._Hash"]:
    """(the sample's kept fields, its steps, a resolver of attachment references, the full length
    of each attachment cut at the cap, the log's hasher from now on). `keep` picks the fields to
    keep from the sample's top-level values (events and attachments never reach it). The member's
    name and bytes go to `hasher`; when the one pass gives up half-way, a copy taken before it
    reads them again and is returned in its place (a hash cannot be rewound)."""
    hasher.update(name.encode())
    before, counted = hasher.copy(), archive.total
    try:
        with archive.stream(name) as raw:
            return (*_OnePass(raw, hasher, where, cap, keep).read(), hasher)
    except _Unread:
        archive.total = counted  # read again: its bytes count once against the archive's cap
    return (*_token_by_token(archive, name, where, before, cap, keep), before)


def _token_by_token(archive: ArchiveReader, name: str, where: str, hasher: "hashlib._Hash", cap: int,
                    keep: Callable[[dict], dict]):
    """The sample read from ijson's tokens: everything but the attachments first, then the
    attachments the steps and kept fields refer to."""
    import ijson

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
                    _take(key, value, wanted, fields_refs, cap, texts, lengths)
        except ijson.JSONError as exc:
            raise IngestError(f"{where}: not valid JSON ({exc})") from None
    return kept, steps, texts.get, lengths


def _take(key: Any, value: Any, wanted: set[str], whole: set[str], cap: int, texts: dict[str, str],
          lengths: dict[str, int]) -> None:
    """Keep an attachment that is wanted, cut at the cap unless a kept field refers to it."""
    if key in wanted and isinstance(value, str):
        if key not in whole and len(value) > cap:
            lengths[key] = len(value)
            value = value[:cap]
        texts[key] = value


class _Unread(Exception):
    """The one pass cannot read this member as it is laid out: it is read token by token."""


class _Nested:
    """A top-level container value in the sample's keys until it is parsed."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


_NOT_KEPT = object()  # the events and attachments: read, never a field of the sample
_BLANK = b" \t\r\n"


class _OnePass:
    """One read of a member. The structure scan puts every byte in one of these parts, each read
    by a real JSON parser: the top level with its containers left empty (ijson: its keys and
    scalars), each event (orjson, handed to the steps as it ends), the commas between events,
    each other top-level container (orjson) and the attachments (ijson's C parser, streamed)."""

    def __init__(self, raw, hasher: "hashlib._Hash", where: str, cap: int, keep: Callable[[dict], dict]) -> None:
        import ijson

        self.ijson, self.raw, self.hasher, self.where, self.cap, self.keep = ijson, raw, hasher, where, cap, keep
        self.steps = SampleSteps(cap)
        self.scan = StructureScan()
        self.tokens = ijson.sendable_list()
        self.top = ijson.parse_coro(self.tokens, use_float=True)
        self.depth = 0  # of the top level's tokens
        self.key: str | None = None  # the top-level key last read
        self.fields: dict[str, Any] = {}
        self.nested: list[Any] = []
        self.mode = "before"  # before, top, events, event, value, attachments, after
        self.parts: list[bytes] = []  # the bytes of the event or value being read
        self.between = bytearray()  # what lies between two events
        self.n_events = 0
        self.attachments: Any = None  # their parser, while they are read
        self.found = ijson.sendable_list()
        self.wanted: set[str] | None = None  # the attachments kept (None: none were read)
        self.whole: set[str] = set()
        self.texts: dict[str, str] = {}
        self.lengths: dict[str, int] = {}

    def read(self) -> tuple[dict, SampleSteps, Callable[[str], str | None], dict[str, int]]:
        try:
            while chunk := self.raw.read(CHUNK_BYTES):
                self.hasher.update(chunk)
                self._chunk(chunk)
            if self.mode != "after":
                raise _Unread
            self.top.close()
            self._top_tokens()
        except (self.ijson.JSONError, orjson.JSONDecodeError):
            raise _Unread from None
        sample = self._sample()
        steps, where = self.steps, self.where
        steps.messages(sample.get("messages"), f"{where}: messages", trailing_only=steps.saw_events)
        steps.ending(sample.get("error"), sample.get("limit"), where)
        kept = self.keep(sample)
        del sample
        whole = _refs(kept)
        wanted = steps.refs | whole
        if wanted and self.wanted is not None and (not wanted <= self.wanted or whole != self.whole):
            raise _Unread  # the attachments came before some of what refers to them
        return kept, steps, self.texts.get, self.lengths

    def _sample(self) -> dict:
        fields = {}
        for key, value in self.fields.items():
            if isinstance(value, _Nested):
                value = self.nested[value.index]
                if value is _NOT_KEPT:
                    continue
            fields[key] = value
        return fields

    # ------------------------------------------------------------ the places the scan finds

    def _chunk(self, chunk: bytes) -> None:
        at, depth, opens = self.scan.brackets(chunk)
        # what changes the part being read: the top level's brackets, its values', its events'
        marks = (depth <= 2) | (opens & (depth == 3))
        done = 0
        for offset, level, opening in zip(at[marks].tolist(), depth[marks].tolist(), opens[marks].tolist()):
            if opening:
                done = self._open(chunk, done, offset, level)
            else:
                done = self._close(chunk, done, offset, level)
        self._feed(chunk[done:])

    def _open(self, chunk: bytes, done: int, offset: int, level: int) -> int:
        """Handle an opening bracket at `offset`; return the offset read up to."""
        if level == 1:
            self._feed(chunk[done:offset])
            if self.mode != "before" or chunk[offset] != 0x7B:  # the sample is an object
                raise _Unread
            self.mode = "top"
            return offset
        if level == 2:
            if self.mode != "top":
                raise _Unread
            self._feed(chunk[done:offset])
            self._top_tokens()
            key, bracket = self.key, chunk[offset]
            events = key == "events" and bracket == 0x5B
            attachments = key == "attachments" and bracket == 0x7B
            if attachments and self.wanted is not None:
                raise _Unread  # a second attachments object: not worth a one-pass reading
            self.nested.append(_NOT_KEPT if events or attachments else None)
            self.top.send(b"[]" if bracket == 0x5B else b"{}")  # the container's place, left empty
            self._top_tokens()
            if events:
                self.mode, self.between = "events", bytearray()
                return offset + 1
            if attachments:
                self._start_attachments()
                self.mode = "attachments"
                return offset
            self.mode, self.parts = "value", []
            return offset
        if self.mode == "events":  # level 3: an event begins
            self._feed(chunk[done:offset])
            if bytes(self.between).strip(_BLANK) != (b"," if self.n_events else b""):
                raise _Unread
            self.mode, self.parts = "event", []
            return offset
        return done

    def _close(self, chunk: bytes, done: int, offset: int, level: int) -> int:
        """Handle a closing bracket at `offset`; return the offset read up to."""
        end = offset + 1
        if level == 2:
            if self.mode == "event":
                self.parts.append(chunk[done:end])
                event = orjson.loads(b"".join(self.parts))
                self.parts = []
                self.steps.event(event, f"{self.where}: events[{self.n_events}]")
                del event
                self.n_events += 1
                self.mode, self.between = "events", bytearray()
                return end
            return done
        if level == 1:
            if self.mode == "events":
                self._feed(chunk[done:offset])
                if chunk[offset] != 0x5D or bytes(self.between).strip(_BLANK):
                    raise _Unread
            elif self.mode == "value":
                self.parts.append(chunk[done:end])
                self.nested[-1] = orjson.loads(b"".join(self.parts))
                self.parts = []
            elif self.mode == "attachments":
                self._feed(chunk[done:end])
                self.attachments.close()
                self._attached()
            else:
                raise _Unread
            self.mode = "top"
            return end
        if level == 0 and self.mode == "top":
            self._feed(chunk[done:end])
            self.mode = "after"
            return end
        raise _Unread

    def _feed(self, data: bytes) -> None:
        """Bytes of the part being read."""
        if not data:
            return
        mode = self.mode
        if mode in ("event", "value"):
            self.parts.append(data)
        elif mode == "events":
            self.between += data
        elif mode == "top":
            self.top.send(data)
        elif mode == "attachments":
            self.attachments.send(data)
            self._attached()
        elif data.strip(_BLANK):  # before the sample or after it: nothing but blanks
            raise _Unread

    # ------------------------------------------------------------ the parts' parsers

    def _top_tokens(self) -> None:
        """The top level's keys and scalars (its containers come empty: their places)."""
        for _, event, value in self.tokens:
            if event in ("start_map", "start_array"):
                self.depth += 1
                if self.depth == 2:
                    self.fields[self.key] = _Nested(len(self.nested) - 1)
            elif event in ("end_map", "end_array"):
                self.depth -= 1
            elif event == "map_key" and self.depth == 1:
                self.key = value
            elif self.depth == 1:
                self.fields[self.key] = value
        del self.tokens[:]

    def _start_attachments(self) -> None:
        """The attachments to keep: those the steps so far and the kept fields so far refer to
        (in Inspect's layout they follow everything that refers to them; `read` checks it)."""
        kept = self.keep(self._sample())
        self.whole = _refs(kept)
        self.wanted = self.steps.refs | self.whole
        self.attachments = self.ijson.kvitems_coro(self.found, "")

    def _attached(self) -> None:
        for key, value in self.found:
            _take(key, value, self.wanted, self.whole, self.cap, self.texts, self.lengths)
        del self.found[:]


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
