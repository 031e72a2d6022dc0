"""Proves the error hierarchy of spec 08 §1: one base, exactly nine contract names, never Python's
built-in TypeError, and every error raised through the library carries a message and a hint."""

from __future__ import annotations

import builtins

import pytest

import fgraph
from fgraph.core import errors
from tests.support.clock import stepping_clock

CONTRACT_NAMES = ("NotFound", "Conflict", "SchemaError", "TypeError", "QueryError", "FormatError", "ReadOnly",
                  "TooLarge", "Unsupported")
CLASS_OF = {
    "NotFound": fgraph.NotFound, "Conflict": fgraph.Conflict, "SchemaError": fgraph.SchemaError,
    "TypeError": fgraph.ValueTypeError, "QueryError": fgraph.QueryError, "FormatError": fgraph.FormatError,
    "ReadOnly": fgraph.ReadOnly, "TooLarge": fgraph.TooLarge, "Unsupported": fgraph.Unsupported,
}


def test_registry_holds_exactly_the_nine_contract_names():
    assert set(errors.ERROR_CLASSES) == set(CONTRACT_NAMES)
    assert errors.ERROR_CLASSES == CLASS_OF
    for name, cls in errors.ERROR_CLASSES.items():
        assert cls.name == name


@pytest.mark.parametrize("name", CONTRACT_NAMES)
def test_each_class_is_a_direct_subclass_of_the_base(name):
    cls = CLASS_OF[name]
    assert cls.__bases__ == (fgraph.FgraphError,)
    assert issubclass(cls, Exception)
    assert cls.exit_code == 1
    assert getattr(fgraph, cls.__name__) is cls
    assert cls.__name__ in fgraph.__all__


def test_base_is_a_plain_exception():
    assert fgraph.FgraphError.__bases__ == (Exception,)
    assert fgraph.FgraphError.name == "FgraphError"
    assert fgraph.FgraphError.exit_code == 1
    assert "FgraphError" in fgraph.__all__


def test_type_error_is_not_the_builtin():
    assert fgraph.ValueTypeError.name == "TypeError"
    assert not issubclass(fgraph.ValueTypeError, builtins.TypeError)
    assert errors.FgraphTypeError is fgraph.ValueTypeError
    caught_as = None
    try:
        raise fgraph.ValueTypeError("bad value", "fix it")
    except builtins.TypeError:
        caught_as = "builtin"
    except fgraph.FgraphError:
        caught_as = "fgraph"
    assert caught_as == "fgraph"


def test_builtin_type_error_is_not_an_fgraph_error():
    assert not issubclass(builtins.TypeError, fgraph.FgraphError)


@pytest.mark.parametrize("hint, text", [
    ("try again", "it broke; try again"),
    (None, "it broke"),
    ("", "it broke"),
])
def test_str_is_message_then_hint(hint, text):
    exc = fgraph.Conflict("it broke", hint)
    assert str(exc) == text
    assert exc.message == "it broke"
    assert exc.hint == hint
    assert exc.args == ("it broke",)


def test_hint_defaults_to_none():
    exc = fgraph.NotFound("gone")
    assert exc.hint is None
    assert str(exc) == "gone"


def test_catching_by_base_keeps_the_contract_name():
    with pytest.raises(fgraph.FgraphError) as caught:
        raise fgraph.TooLarge("big", "smaller")
    assert caught.value.name == "TooLarge"
    assert type(caught.value) is fgraph.TooLarge


# -- every contract error, raised through the public API, says what to do next ---------------------

@pytest.fixture
def db():
    database = fgraph.connect(":memory:", clock=stepping_clock())
    database.transact({"id": "ada", "p/age": 1})
    yield database
    database.close()


TRIGGERS = {
    "NotFound": lambda db: db.entity("nobody"),
    "Conflict": lambda db: db.transact({"id": "x", "a/b": 1}, if_basis_tx=64),
    "SchemaError": lambda db: db.transact({"id": "x", "noslash": 1}),
    "TypeError": lambda db: db.transact({"id": "x", "a/b": None}),
    "QueryError": lambda db: db.entity("ada", depth=-1),
    "FormatError": lambda db: fgraph.connect(""),
    "ReadOnly": lambda db: db.at(db.latest_tx()).transact({"id": "x", "a/b": 1}),
    "TooLarge": lambda db: db.transact({"id": "x", "a/b": "x" * (1048576 + 1)}),
    "Unsupported": lambda db: db.undo(64),
}


@pytest.mark.parametrize("name", CONTRACT_NAMES)
def test_library_errors_carry_name_message_and_hint(db, name):
    with pytest.raises(fgraph.FgraphError) as caught:
        TRIGGERS[name](db)
    exc = caught.value
    assert type(exc) is CLASS_OF[name]
    assert exc.name == name
    assert isinstance(exc.message, str) and exc.message.strip()
    assert isinstance(exc.hint, str) and exc.hint.strip()
    assert str(exc) == f"{exc.message}; {exc.hint}"


def test_stream_errors_carry_their_line_as_data():
    """Issue 11 item 6: callers read ``exc.line``, never the message text."""
    import pytest

    from fgraph.core.errors import FormatError
    db = fgraph.connect(":memory:")
    try:
        with pytest.raises(fgraph.FgraphError) as caught:
            db.apply_summary('\n\n{"fgraph": "event/2"}\n')
        assert caught.value.line == 3 and caught.value.message.startswith("line 3: ")
        with pytest.raises(fgraph.FgraphError) as caught:
            db.restore('{"fgraph": "snapshot/1"}\n')
        assert caught.value.line == 1
    finally:
        db.close()
    inner = FormatError("bad", "hint").at_line(7)
    assert inner.at_line(9) is inner and inner.line == 7 and str(inner) == "line 7: bad; hint"


def test_rewrap_keeps_the_class_and_the_hint_and_adds_the_callers_words():
    original = fgraph.ValueTypeError("unexpected character", "correct the JSON syntax")
    told = errors.rewrap(original, before="add input line 3: ")
    assert type(told) is fgraph.ValueTypeError and told.name == "TypeError"
    assert str(told) == "add input line 3: unexpected character; correct the JSON syntax"
    after = errors.rewrap(fgraph.Conflict("disk full"), after="; the excision was rolled back")
    assert (after.message, after.hint) == ("disk full; the excision was rolled back", None)
    replaced = errors.rewrap(original, "another message", hint="another hint")
    assert (replaced.message, replaced.hint) == ("another message", "another hint")
    assert original.message == "unexpected character"   # the original is left as it was


def test_a_rewrapped_error_keeps_where_it_came_from():
    """Raised ``from`` the original, so a traceback shows both (parse_json_argument of the CLI)."""
    from fgraph.cli.base import parse_json_argument
    with pytest.raises(fgraph.ValueTypeError) as caught:
        parse_json_argument("{", "--components")
    assert caught.value.message.startswith("--components is not valid JSON: ")
    assert isinstance(caught.value.__cause__, fgraph.ValueTypeError)
