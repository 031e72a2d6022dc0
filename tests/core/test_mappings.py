"""Proves the immutable result mappings (fgraph/core/mappings.py): read by key or attribute, equal
to plain dicts, never changed, and turned back into plain JSON-ready values."""

from __future__ import annotations

import pytest

from fgraph.core.mappings import FrozenMapping, TxReport, plain


def test_read_by_key_and_attribute_and_compare_with_dicts():
    report = TxReport({"status": "applied", "tx": 70, "ids": {"ada": 65}})
    assert report["tx"] == 70 and report.status == "applied" and len(report) == 3
    assert report == {"status": "applied", "tx": 70, "ids": {"ada": 65}}
    assert list(report) == ["status", "tx", "ids"] and report.to_dict() == dict(report)
    assert repr(report) == "TxReport(status='applied', tx=70, ids={'ada': 65})"
    with pytest.raises(AttributeError):
        report.missing


def test_never_changed():
    report = TxReport({"tx": 70})
    with pytest.raises(AttributeError, match="immutable"):
        report.tx = 71
    with pytest.raises(TypeError):
        report["tx"] = 71  # type: ignore[index]
    copy = report.to_dict()
    copy["tx"] = 71
    assert report.tx == 70


def test_plain_unwraps_nested_mappings():
    nested = [TxReport({"tx": 70, "inner": FrozenMapping({"a": [FrozenMapping({"b": 1})]})}), 3]
    assert plain(nested) == [{"tx": 70, "inner": {"a": [{"b": 1}]}}, 3]
    assert type(plain(nested)[0]["inner"]) is dict
