"""The spec table (``fgraph.mcp.specs``) registered with the SDK through its public API.

Each tool becomes one function whose signature is built from its ``ToolSpec`` and handed to
``MCPServer.add_tool``: the SDK derives from it the input schema a client lists (titled
``<tool>Arguments``, the properties in the table's order, ``minimum``/``maximum``/``enum`` from
the table) and validates each call against it, coercing as spec 10 §3.3 records (``"5"`` is 5,
unknown arguments are ignored, a wrong type is its ``validation error`` report). The function
then calls ``Tools.<name>`` with the arguments by name, and, for a write, the client's name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, Union

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from fgraph.core.sqlite_errors import as_typed
from fgraph.mcp.specs import Hints, Param, ToolSpec, listed, proposing

_PYTHON = {"string": str, "integer": int, "boolean": bool, "object": dict[str, Any], "array": list[Any]}
_RESULT = dict[str, Any]   # the envelope: structured output whose schema is `<tool>DictOutput`


def annotation(param: Param):
    """The Python type whose JSON schema is the parameter's: its JSON types in order, null too
    when its default is None, any JSON value when it names no type."""
    types = [_PYTHON[name] for name in param.types] or [Any]
    if param.default is None:
        types.append(type(None))
    return types[0] if len(types) == 1 else Union[tuple(types)]  # noqa: UP007 - a runtime tuple of types


def default(param: Param):
    """What the signature gives as the default: the value, with the bounds and choices the input
    schema states (issue 30 item 6); the tool enforces them itself (``ToolSpec.check``)."""
    stated: dict[str, Any] = {}
    if param.minimum is not None:
        stated.update(minimum=param.minimum, maximum=param.maximum)
    if param.choices:
        stated["enum"] = list(param.choices)
    if param.required:
        return Field(json_schema_extra=stated) if stated else inspect.Parameter.empty
    return Field(param.default, json_schema_extra=stated) if stated else param.default


def signature(spec: ToolSpec) -> inspect.Signature:
    """Keyword-only parameters in the table's order (so a required one may follow an optional
    one), and ``ctx`` for a write, which the SDK fills with the request's context."""
    params = [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=default(p), annotation=annotation(p))
              for p in spec.params]
    if spec.needs_write:
        params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    return inspect.Signature(params, return_annotation=_RESULT)


def annotations(hints: Hints) -> ToolAnnotations:
    return ToolAnnotations(readOnlyHint=hints.read_only, destructiveHint=hints.destructive,
                           idempotentHint=hints.idempotent, openWorldHint=hints.open_world)


def client_of(ctx: Context) -> str:
    """``by`` of an MCP write: ``mcp:`` and the client's name from ``initialize``, verbatim."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    return "mcp:" + name


def typed_errors(error: type[Exception]):
    """Our typed errors (and SQLite's failures of the environment) leave a tool or resource body
    as the SDK's ``error`` with our message; anything else is a bug and stays one (the SDK
    reports it without its text)."""
    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                typed = as_typed(exc)
                if typed is None:
                    raise
                raise error(str(typed)) from None
        return call
    return wrap


def tool_function(spec: ToolSpec, method: Callable[..., dict]) -> Callable[..., dict]:
    """The function the SDK registers for ``spec``: its signature is the table's, its body one
    call of ``method`` with the arguments by name; a failure is a tool error, which the SDK
    prefixes with the tool's name."""
    @typed_errors(ToolError)
    def call(**arguments):
        if spec.needs_write:
            arguments = {"by": client_of(arguments.pop("ctx")), **arguments}
        return method(**arguments)

    call.__name__ = call.__qualname__ = spec.name   # the SDK titles the schemas after it
    call.__signature__ = signature(spec)
    # the SDK finds the context parameter through the type hints
    call.__annotations__ = {**{p.name: p.annotation for p in call.__signature__.parameters.values()},
                            "return": _RESULT}
    return call


def register_tools(server: MCPServer, tools, *, write: bool, allow_excise: bool = False, propose: bool = False) -> None:
    """Every tool of the table a server lists (``--write`` or not, ``--allow-excise`` or not), in its
    order; with ``propose`` the write tools as ``--propose`` lists them (``specs.proposing``)."""
    for spec in listed(write=write or propose, allow_excise=allow_excise):
        if propose and spec.needs_write:
            spec = proposing(spec)
        server.add_tool(tool_function(spec, getattr(tools, spec.name)), name=spec.name,
                        description=spec.description, annotations=annotations(spec.hints), structured_output=True)
