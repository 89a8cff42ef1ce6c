"""Reading logs safely: a reader's unanticipated shapes become an IngestError naming the file."""

from typing import Callable, Iterable, Iterator, TypeVar

from core.errors import IngestError

T = TypeVar("T")
R = TypeVar("R")


MALFORMED = (AttributeError, KeyError, TypeError, ValueError)


def malformed(where: object, what: str, exc: Exception) -> IngestError:
    """A shape no reader check anticipated, reported against the user's file, not as a traceback."""
    problem = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
    return IngestError(f"{where}: not a well-formed {what} ({problem})")


def read_each(files: Iterable[T], read_one: Callable[[T], Iterable[R]], what: str) -> Iterator[R]:
    """Each file's runs in turn, every one of a file read before any is yielded; a shape the
    reader did not anticipate is an error naming the file."""
    for file in files:
        try:
            parsed = list(read_one(file))
        except MALFORMED as exc:
            raise malformed(file, what, exc) from None
        yield from parsed
