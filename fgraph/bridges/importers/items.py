"""The contract between ``fgraph import`` and a format: the ``Importer`` protocol and its items.

An importer reads one bounded source (the file, or stdin spooled) and yields one item per record
it finds: an ``Item`` holding the record's event/1 record, or a ``BadItem`` saying why it is not
a record. Each item says where it is (``Where``): a line number for a line-based format, which the
pipeline reports as ``line N``, or a short text for any other (a Markdown folder's
``notes/ada.md#Early life``). The pipeline counts, batches and reports items; it never needs to
know how a format reads its source. ``JsonLines`` is the base of the formats with one JSON record
per line: such a format only says how one record becomes an event.

``registry`` maps the format names to importers; docs/import.md, "Adding an import format".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, Union

from fgraph.bridges.add.data_source import BadLine, DataSource
from fgraph.bridges.importers.records import BadRecord
from fgraph.core.canonical import loads
from fgraph.core.errors import FgraphError

Where = Union[int, str]   # a line number, or a locator of a format that is not line-based
OPTIONS = frozenset({"mirror"})   # what a format may support beyond a plain, additive import


def describe(where: Where) -> str:
    """Where an item is, for a message: ``line 4`` or the locator itself."""
    return f"line {where}" if isinstance(where, int) else where


@dataclass(frozen=True, slots=True)
class Item:
    """One record of the source as an event/1 record."""

    where: Where
    event: dict


@dataclass(frozen=True, slots=True)
class BadItem:
    """One part of the source that is not a record of the format, and why (for the health report)."""

    where: Where
    reason: str


@dataclass(frozen=True, slots=True)
class ImportContext:
    """What an importer stamps its events with: ``at`` for records that carry no time of their own
    (one reading for the whole run), the author ``by`` for records that name none, ``meta`` (or
    None), and the source label each event's ``source`` starts with."""

    at: int
    label: str
    by: str | None = None
    meta: object = None

    def source(self, where: Where) -> str:
        """An event's ``source``: ``LABEL:WHERE`` (a mirror finds its source's facts by it)."""
        return f"{self.label}:{where}"


class Importer(Protocol):
    """A format of ``fgraph import``. ``name`` is the FORMAT word; ``description`` one short line for
    the help (it shares an 80-column line with the name); ``example`` a whole command line using it; ``options`` what it supports of ``OPTIONS``;
    ``line_based`` whether its locators are line numbers (the summary then also counts lines)."""

    name: str
    description: str
    example: str
    options: frozenset[str]
    line_based: bool

    def items(self, source: DataSource, context: ImportContext) -> Iterator[Item | BadItem]:
        """Every record of ``source`` in order, read with bounded memory (the source may be read again)."""
        ...


class JsonLines:
    """The base of the formats with one JSON object per line: a line that is not valid UTF-8, is
    over the line cap, is not JSON or is not a record of the format is one bad item, and reading
    goes on. A subclass sets the declared attributes and writes ``event``."""

    name: str
    description: str
    example: str
    options: frozenset[str] = frozenset()
    line_based = True

    def event(self, record, context: ImportContext, where: int) -> dict:
        """The event/1 record of one parsed line; raises ``BadRecord`` when it is not a record of the format."""
        raise NotImplementedError

    def items(self, source: DataSource, context: ImportContext) -> Iterator[Item | BadItem]:
        for number, line in source.lines_with_faults():   # blank lines are not yielded, but they are counted
            if isinstance(line, BadLine):   # undecodable or oversized: one bad line, not the end of the import
                yield BadItem(number, line.reason)
                continue
            try:
                record = loads(line)
            except FgraphError as exc:
                yield BadItem(number, exc.message)
                continue
            try:
                event = self.event(record, context, number)
            except BadRecord as exc:
                yield BadItem(number, exc.reason)
                continue
            yield Item(number, event)
