"""Proves fgraph/core/checks.py: an integer is an int and never a bool, within its bounds, refused
in the caller's own words; and no module of the package checks one by hand any more."""

from __future__ import annotations

import pathlib
import re

import pytest

import fgraph
from tests.support.clock import stepping_clock
from fgraph.core.checks import is_strict_int, optional_int, positive_number, strict_int
from fgraph.core.errors import FormatError, QueryError, ValueTypeError

PACKAGE = pathlib.Path(fgraph.__file__).parent


def test_an_int_is_strict_and_a_bool_float_or_text_is_not():
    assert is_strict_int(0) and is_strict_int(-(2**70))
    assert not any(is_strict_int(v) for v in (True, False, 1.0, "1", None, [1]))


def test_within_bounds_the_value_comes_back():
    assert strict_int(5, "m") == 5
    assert strict_int(1, "m", low=1, high=1) == 1
    assert strict_int(-3, "m", high=0) == -3 and strict_int(10**30, "m", low=0) == 10**30


@pytest.mark.parametrize("value", [True, False, 1.0, "2", None, 0, 11])
def test_outside_or_not_an_int_is_refused_in_the_callers_words(value):
    with pytest.raises(ValueTypeError) as caught:
        strict_int(value, "limit {value!r} is invalid", "pass {low} through {high}", low=1, high=10)
    assert caught.value.message == f"limit {value!r} is invalid"
    assert caught.value.hint == "pass 1 through 10"


def test_the_error_is_the_callers_class_or_factory():
    with pytest.raises(QueryError, match="depth -1"):
        strict_int(-1, "depth {value!r} must be a non-negative integer", "pass --depth 1 or more", low=0,
                   error=QueryError)
    # a factory without a hint (a stream reader's, which adds its own) is called with the message only
    made = []

    def refuse(message):
        made.append(message)
        return FormatError(message, "the reader's hint")

    with pytest.raises(FormatError) as caught:
        strict_int("x", "at {value!r} is not an instant", error=refuse)
    assert made == ["at 'x' is not an instant"] and caught.value.hint == "the reader's hint"


def test_a_literal_brace_is_doubled_in_a_template():
    with pytest.raises(ValueTypeError, match=r"write \{\"limit\": 10\}"):
        strict_int(-1, "bad", 'write {{"limit": 10}}', low=0)


def test_optional_int_lets_none_through_and_checks_the_rest():
    assert optional_int(None, "m", low=1) is None
    assert optional_int(3, "m", low=1) == 3
    with pytest.raises(ValueTypeError, match="incoming limit 0 is invalid"):
        optional_int(0, "incoming limit {value!r} is invalid", low=1)


def test_positive_number_takes_a_finite_int_or_float_above_zero():
    assert positive_number(0.5, "m") == 0.5 and positive_number(3, "m") == 3


@pytest.mark.parametrize("value", [True, 0, -1, 0.0, -0.5, float("inf"), float("nan"), "1", None])
def test_positive_number_refuses_the_rest_in_the_callers_words(value):
    with pytest.raises(ValueTypeError) as caught:
        positive_number(value, "interval={value!r} is invalid", "pass seconds, not {value!r}")
    assert caught.value.message == f"interval={value!r} is invalid" and caught.value.hint == f"pass seconds, not {value!r}"
    with pytest.raises(QueryError, match="^wait"):
        positive_number(value, "wait {value!r}", error=QueryError)


@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    database.transact({"id": "ada", "p/age": 1})
    yield database
    database.close()


def test_messages_pinned_elsewhere_are_unchanged(db):
    """The words the published runtime and the CLI tests compare, read through the real callers."""
    with pytest.raises(ValueTypeError) as caught:
        db.receipt(True)
    assert str(caught.value) == "transaction True is not a 64-bit integer; pass a transaction id"
    with pytest.raises(ValueTypeError) as caught:
        db.transact({"id": "a", "k/n": 1}, if_basis_tx=63)
    assert caught.value.message == "if_basis_tx 63 must be a transaction id (an integer >= 64)"
    with pytest.raises(ValueTypeError) as caught:
        db.context(budget=99)
    assert str(caught.value) == "context budget 99 is invalid; pass a character budget from 100 through 100000"
    with pytest.raises(QueryError) as caught:
        db.datoms(limit=1001)
    assert str(caught.value) == "datoms limit 1001 must be an integer from 1 to 1000; pass --limit 100"
    with pytest.raises(ValueTypeError) as caught:
        db.search(text="x", k=0)
    assert str(caught.value) == "search k=0 is invalid; use an integer from 1 through 100"
    from fgraph.bridges.sync import files, log   # the options are checked before any store is opened
    for sync in (lambda **o: files.sync(["a.db"], "b.db", **o), lambda **o: log.publish(["a.db"], None, **o)):
        with pytest.raises(ValueTypeError) as caught:
            sync(batch_size=0)
        assert str(caught.value) == "batch_size=0 is invalid; pass a positive number of events"
        with pytest.raises(ValueTypeError) as caught:
            sync(interval=float("inf"))
        assert str(caught.value) == "interval=inf is invalid; pass a positive, finite number of seconds"
    with pytest.raises(ValueTypeError) as caught:
        list(db.iter_events(since=63))
    assert str(caught.value) == "--since 63 is outside [64, 2^63-1]; pass a local transaction id (64 starts after genesis)"


# ``isinstance(x, bool) or not isinstance(x, int)`` in either order, ``type(x) is not int``, and
# the positive ``isinstance(x, int) and not isinstance(x, bool)``: each is a hand-written strict int
# (``type(x) is not int and type(x) is not float`` is a number check: a vector's element).
INLINE = re.compile(r"isinstance\((?P<a>[\w\[\]\"'.]+), bool\) or not isinstance\((?P=a), int\)"
                    r"|not isinstance\((?P<b>[\w\[\]\"'.]+), int\) or isinstance\((?P=b), bool\)"
                    r"|isinstance\((?P<c>[\w\[\]\"'.]+), int\) and not isinstance\((?P=c), bool\)"
                    r"|type\((?P<d>[\w\[\]\"'.]+)\) is not int\b(?! and type\((?P=d)\) is not float)")

# Places where the pattern is not a check of an argument.
ALLOWED = {
    "core/checks.py": "the one home of the check",
}


def inline_checks() -> dict[str, int]:
    found: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        name = str(path.relative_to(PACKAGE))
        count = len(INLINE.findall(path.read_text()))
        if count and name not in ALLOWED:
            found[name] = count
    return found


def test_the_pattern_sees_each_form():
    for text in ("isinstance(x, bool) or not isinstance(x, int)", "not isinstance(tx, int) or isinstance(tx, bool)",
                 "isinstance(r['id'], int) and not isinstance(r['id'], bool)", "type(limit) is not int"):
        assert INLINE.search(text), text
    assert not INLINE.search("isinstance(x, bool) or not isinstance(y, int)")
    assert not INLINE.search("type(x) is not int and type(x) is not float")


def test_no_module_checks_an_integer_by_hand():
    assert inline_checks() == {}
