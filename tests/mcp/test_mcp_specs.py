"""The spec table of the MCP tools (fgraph/mcp/specs.py, issue 46 item 3): its numbers are
core/limits.py's, the tool bodies take its arguments with its defaults, and its checks refuse
what it bounds with a typed error that names the tool, the argument and the fix."""

from __future__ import annotations

import inspect

import pytest

import fgraph
from fgraph.core import limits
from fgraph.mcp.specs import SPECS, TOOLS
from fgraph.mcp.tools import Tools


def test_the_bounds_and_defaults_are_the_limits():
    """The numbers of the table are core/limits.py's (one statement of each number)."""
    def param(tool, name):
        return next(p for p in SPECS[tool].params if p.name == name)
    assert (param("recall", "k").default, param("recall", "k").maximum) == (limits.MCP_RECALL_K,
                                                                           limits.MCP_RECALL_MAX_K)
    assert param("recall", "expand").maximum == limits.MCP_RECALL_MAX_EXPAND
    assert (param("about", "depth").default, param("about", "depth").maximum) == (limits.MCP_ABOUT_DEPTH,
                                                                                 limits.MCP_ABOUT_MAX_DEPTH)
    for tool in ("why", "history", "datoms", "schema"):
        assert param(tool, "limit").default == param(tool, "limit").maximum == limits.MCP_PAGE_LIMIT
    budget, items = param("context", "budget"), param("context", "limit")
    assert (budget.default, budget.minimum, budget.maximum) == (limits.CONTEXT_BUDGET, limits.CONTEXT_MIN_BUDGET,
                                                                limits.CONTEXT_MAX_BUDGET)
    assert (items.default, items.maximum) == (limits.CONTEXT_LIMIT, limits.CONTEXT_MAX_LIMIT)
    numbers = {value for p in (p for spec in TOOLS for p in spec.params)
               for value in (p.default, p.minimum, p.maximum) if type(value) is int and value > 1}
    stated = {value for value in vars(limits).values() if type(value) is int}
    assert numbers and numbers <= stated   # no bound or default above one that limits.py does not state


def test_each_tool_body_takes_the_table_arguments_with_its_defaults():
    for spec in TOOLS:
        params = list(inspect.signature(getattr(Tools, spec.name)).parameters.values())[1:]   # self
        if spec.needs_write:
            assert params[0].name == "by"   # the client's name, from initialize (spec 10 §5.1)
            params = params[1:]
        assert [p.name for p in params] == [p.name for p in spec.params], spec.name
        for body, declared in zip(params, spec.params):
            if not declared.required:
                assert body.default == declared.default, (spec.name, body.name)


@pytest.mark.parametrize(("tool", "arguments", "fragment"), [
    ("recall", {"k": 21}, "recall k must be an integer from 1 through 20"),
    ("about", {"depth": -1}, "about depth must be an integer from 0 through 2"),
    ("about", {"incoming": "yes"}, "about incoming is not a boolean"),
    ("datoms", {"limit": True}, "datoms limit must be an integer"),
    ("datoms", {"index": "xyz"}, "datoms index must be one of eavt, avet, vaet"),
    ("context", {"budget": 99}, "context budget must be an integer from 100 through 100000"),
    ("context", {"by": "fact"}, "context by must be one of change, entity"),
])
def test_the_table_refuses_what_it_bounds_with_a_typed_error_naming_the_argument(tool, arguments, fragment):
    with pytest.raises(fgraph.TypeError) as caught:
        SPECS[tool].check(**arguments)
    assert fragment in caught.value.message and caught.value.hint.startswith("pass ")
    SPECS[tool].check()   # nothing given, nothing to refuse
