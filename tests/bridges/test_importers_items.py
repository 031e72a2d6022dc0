"""The items of an import: the JSON-lines base turns each line into an item or a bad item at its
line number — undecodable, oversized, not JSON, not a record — and reading goes on; blank lines
are no items; a locator is described as ``line N`` or as itself."""

from __future__ import annotations

from fgraph.bridges.add.data_source import DataSource, open_data
from fgraph.bridges.importers.items import BadItem, ImportContext, Item, JsonLines, describe
from fgraph.bridges.importers.records import BadRecord


class Echo(JsonLines):
    """A line format whose record must be an object with a ``name``."""

    name, description, example = "echo", "Echo.", "fgraph import echo f"

    def event(self, record, context, where):
        if not isinstance(record, dict) or "name" not in record:
            raise BadRecord("no name")
        return {"event": record["name"], "source": context.source(where), "at": context.at}


def test_each_line_is_an_item_or_a_bad_item_at_its_line(tmp_path):
    path = tmp_path / "f.jsonl"
    path.write_bytes(b'{"name":"a"}\n\n{"name":\n[1]\n\xff\xfe\n{"name":"b"}\n')
    with open_data("@" + str(path), None) as source:
        items = list(Echo().items(source, ImportContext(at=7, label="f")))
        assert source.line_count == 6
    assert items[0] == Item(1, {"event": "a", "source": "f:1", "at": 7})
    assert [type(item) for item in items] == [Item, BadItem, BadItem, BadItem, Item]
    assert [item.where for item in items] == [1, 3, 4, 5, 6]
    assert items[1].reason.startswith("invalid JSON") and items[2].reason == "no name"
    assert "not valid UTF-8" in items[3].reason


def test_a_source_in_memory_reads_the_same():
    items = list(Echo().items(DataSource("inline", '{"name":"x"}\n'), ImportContext(at=1, label="L")))
    assert items == [Item(1, {"event": "x", "source": "L:1", "at": 1})]


def test_locators_are_described_for_messages():
    assert describe(4) == "line 4"
    assert describe("notes/ada.md#Early life") == "notes/ada.md#Early life"
