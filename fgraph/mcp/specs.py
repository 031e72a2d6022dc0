"""Every MCP tool, declared once (spec 10 §2.3, §4, §5; issue 46 item 3): its name, the
description an agent reads, its annotations, whether it needs ``--write``, and its arguments
with their JSON types, defaults and bounds, every number taken from ``fgraph.core.limits``.

This table is the only statement of a tool. ``fgraph.mcp.registry`` turns it into the SDK's
registration (the input schema a client lists), ``Tools`` checks its bounds and choices before
any work (``check``), and ``fgraph.mcp.reference`` renders it as the tool section of docs/mcp.md.
The module imports neither the SDK nor pydantic: the CLI's start-up and the docs read it alone.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fgraph.core.checks import strict_int
from fgraph.core.errors import ValueTypeError
from fgraph.core.limits import (
    CONTEXT_BUDGET,
    CONTEXT_LIMIT,
    CONTEXT_MAX_BUDGET,
    CONTEXT_MAX_LIMIT,
    CONTEXT_MIN_BUDGET,
    MCP_ABOUT_ATTRIBUTES,
    MCP_ABOUT_DEPTH,
    MCP_ABOUT_MAX_DEPTH,
    MCP_ABOUT_VALUES,
    MCP_INCOMING_LIMIT,
    MCP_PAGE_LIMIT,
    MCP_QUERY_LIMIT,
    MCP_QUERY_MAX_LIMIT,
    MCP_RECALL_K,
    MCP_RECALL_MAX_EXPAND,
    MCP_RECALL_MAX_K,
)

REQUIRED = object()   # the default of an argument a call must give


@dataclass(frozen=True)
class Hints:
    """The tool annotations of MCP: advice to the client, never the guarantee (the read-only
    connection is)."""
    read_only: bool
    destructive: bool
    idempotent: bool = True
    open_world: bool = False


READ = Hints(read_only=True, destructive=False)
WRITE = Hints(read_only=False, destructive=False)
DESTRUCTIVE = Hints(read_only=False, destructive=True)
PROPOSE = Hints(read_only=False, destructive=False)   # appends a proposal; the store is not touched (decision M10)
PROPOSAL_NOTE = ("PROPOSES, pending a person's review: checked as a write, then queued; nothing is written to the "
                 "store until a person accepts it (status \"proposed\" and the proposal id; a repeated identical "
                 "call returns the same id). ")


@dataclass(frozen=True)
class Param:
    """One argument. ``types`` are the JSON types it accepts, in the order the schema lists
    them (none: any JSON value); a ``None`` default also admits null."""
    name: str
    types: tuple[str, ...]
    description: str
    default: object = REQUIRED
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what the client lists and what the server calls (``Tools.<name>``)."""
    name: str
    description: str
    hints: Hints
    params: tuple[Param, ...]
    returns: str   # the data of the envelope, for docs/mcp.md
    opt_in: str | None = None   # listed only when the server was started with this option too

    @property
    def needs_write(self) -> bool:
        """A tool that writes is registered only with ``--write`` (spec 10 §2.2)."""
        return not self.hints.read_only

    def check(self, **arguments) -> None:
        """Refuse, before any work, an argument outside its bounds or choices (spec 10 §3.3);
        the SDK has already coerced each to its JSON type, a direct caller may not have."""
        for param in self.params:
            if param.name not in arguments:
                continue
            value = arguments[param.name]
            if param.minimum is not None or param.maximum is not None:
                _check_range(self.name, param, value)
            elif param.choices and value not in param.choices:
                raise ValueTypeError(f"{self.name} {param.name} must be one of {', '.join(param.choices)}",
                                     "pass " + " or ".join(f'"{choice}"' for choice in param.choices))
            elif param.types == ("boolean",) and not isinstance(value, bool):
                raise ValueTypeError(f"{self.name} {param.name} is not a boolean", "pass true or false")


def _check_range(tool: str, param: Param, value) -> None:
    strict_int(value, f"{tool} {param.name} must be an integer from {{low}} through {{high}}",
               "pass an integer from {low} through {high}", low=param.minimum, high=param.maximum)


def _page_limit(rows: str) -> Param:
    return Param("limit", ("integer",), f"{rows} per page", MCP_PAGE_LIMIT, 1, MCP_PAGE_LIMIT)


_ENTITY = Param("entity", (), 'a name, a positive id, a lookup `["attr", value]` or `{"eid": uuid}`')
_OPERATION_ID = Param("operation_id", ("string",), "a stable id: a retry with the same id writes nothing twice")
_IF_BASIS_TX = Param("if_basis_tx", ("integer",), "the basis_tx of your last read: the write is refused if the file has changed since")
_ATTRIBUTE = Param("attribute", ("string",), "one attribute (all by default)", None)
_QUERY = Param("q", ("object",), "a JSON Datalog query")
_ARGS = Param("args", ("object",), "the values of the query's `in` variables", None)
_CURSOR = Param("cursor", ("string",), "the next_cursor of the previous page", None)

TOOLS: tuple[ToolSpec, ...] = (
    # the write tools first, as the published server lists them
    ToolSpec("remember", "Store facts, a searchable note, or both; a key makes later calls replace the same note. "
                         "Example: remember(text=\"Ada prefers vim\", key=\"note-1\", operation_id=\"op-1\").",
             WRITE, (
                 _OPERATION_ID,
                 Param("facts", (), "a map, an operation or a list of them", None),
                 Param("text", ("string",), "a note stored as `memory/text`", None),
                 Param("source", ("string",), "where the facts come from", None),
                 Param("key", ("string",), "the note's name: a later call with it replaces the note", None),
                 Param("if_basis_tx", ("integer",), _IF_BASIS_TX.description, None)),
             "the transaction report; `text` becomes a `memory/text` note (replaced later under the same `key`)"),
    ToolSpec("forget", "Retract a value, an attribute or a whole entity without erasing history. "
                       "Example: forget(entity=\"ada\", attribute=\"person/city\", operation_id=\"op-2\", "
                       "if_basis_tx=98).",
             DESTRUCTIVE, (
                 Param("entity", ("string", "integer"), "a name or an id"),
                 _OPERATION_ID, _IF_BASIS_TX, Param("attribute", ("string",), "one attribute", None),
                 Param("value", (), "one value of the attribute", None)),
             "the report of `[\"retract\", entity, attribute?, value?]`; a `value` without an `attribute` is refused"),
    ToolSpec("undo", "Write an audited transaction that compensates an earlier one. "
                     "Example: undo(tx=98, operation_id=\"op-3\", if_basis_tx=99).",
             DESTRUCTIVE, (Param("tx", ("integer",), "the transaction to compensate"), _OPERATION_ID, _IF_BASIS_TX),
             "the report of the audited compensating transaction"),
    ToolSpec("excise", "Erase an entity or attribute from the present and from history, irreversibly; with "
                       "erase_name its name goes too. The answer counts what was erased and never shows a value. "
                       "Example: excise(entity=\"Farid Haddad\", erase_name=true, operation_id=\"gdpr-17\", "
                       "if_basis_tx=98).",
             DESTRUCTIVE, (
                 Param("entity", ("string", "integer"), "a name or an id"),
                 _OPERATION_ID, _IF_BASIS_TX,
                 Param("erase_name", ("boolean",), "erase its name too: afterwards it is unknown, as if it never "
                                                   "existed", False),
                 Param("published_receipt", ("boolean",), "answer with the published receipt, which lists every "
                                                          "erased value", False)),
             "what was erased: `erased` (`attributes` with their fact counts, `facts`, `redacted_events`), `scrub` and "
             "the receipt's `status`, `tx`, `event`, `asserted`; never an erased value unless `published_receipt` "
             "(decision F6, docs/forgetting.md). Ours, and listed only by `fgraph mcp --write --allow-excise` "
             "(decision M8 below)",
             opt_in="allow_excise"),
    ToolSpec("recall", "Ranked retrieval of text memories (keyword, and vector with --embed-cmd). "
                       "Example: recall(query=\"editor preferences\", k=5).",
             READ, (
                 Param("query", ("string",), "the words to look for"),
                 Param("k", ("integer",), "hits", MCP_RECALL_K, 1, MCP_RECALL_MAX_K),
                 Param("expand", ("integer",), "levels of ref neighbours to add", 0, 0, MCP_RECALL_MAX_EXPAND)),
             "search result: hits with evidence and compact pulls, `expanded`, `truncated`, `work_used`. Ours: the "
             "published hits first, then entity-level hits to fill `k`, each marked `\"how\": \"entity\"` with "
             "`words` (decision S1, docs/search.md); when the published rule fills `k` the answer is the published "
             "server's. With an embedder (`--embed-cmd`, `FGRAPH_EMBED_CMD`) the keyword, entity-level and vector "
             "lists are one fused ranking (decision S2)"),
    ToolSpec("about", f"An entity's current facts; incoming=true also lists what refers to it (first "
                      f"{MCP_INCOMING_LIMIT}). Example: about(entity=\"ada\").",
             READ, (
                 _ENTITY,
                 Param("depth", ("integer",), "levels of refs to pull", MCP_ABOUT_DEPTH, 0, MCP_ABOUT_MAX_DEPTH),
                 Param("incoming", ("boolean",), "also list what refers to the entity", False)),
             f"the entity's current facts (first {MCP_ABOUT_ATTRIBUTES} attributes, {MCP_ABOUT_VALUES} values each); "
             "with `incoming: true`, `{entity, incoming, incoming_truncated}`: those facts and what refers to the entity (ours, decision I1 below)"),
    ToolSpec("why", "An entity's current facts with the transactions that asserted them. "
                    "Example: why(entity=\"ada\", attribute=\"person/born\").",
             READ, (_ENTITY, _ATTRIBUTE, _page_limit("rows")),
             "`{items, truncated}`: current facts with the transactions that asserted them"),
    ToolSpec("history", "The timeline of an entity's facts, retracted ones included. "
                        "Example: history(entity=\"ada\").",
             READ, (_ENTITY, _ATTRIBUTE, _page_limit("rows")),
             "`{items, truncated}`: every fact ever asserted, retractions included"),
    ToolSpec("query", f"A JSON Datalog query at one basis (limit {MCP_QUERY_LIMIT} unless given, at most "
                      f"{MCP_QUERY_MAX_LIMIT}). "
                      "Example: query(q={\"find\": [\"?n\"], \"where\": [[\"?e\", \"person/name\", \"?n\"]]}).",
             READ, (_QUERY, _ARGS),
             f"`{{columns, rows}}`; `limit` is {MCP_QUERY_LIMIT} unless the query gives one (0–{MCP_QUERY_MAX_LIMIT})"),
    ToolSpec("datoms", "One page of datoms by index prefix; pass next_cursor for the next page. "
                       "Example: datoms(index=\"avet\", components=[\"person/name\"], limit=50).",
             READ, (
                 Param("index", ("string",), "the index to read", "eavt", choices=("eavt", "avet", "vaet")),
                 Param("components", ("array",), "the index prefix", None),
                 Param("source", ("string",), "live facts or every fact", "current", choices=("current", "history")),
                 _page_limit("datoms"), _CURSOR),
             "`{basis_tx, items, next_cursor}`; a continued cursor keeps its first page's basis"),
    ToolSpec("receipt", "The receipt of one transaction: who, when, why, and its custom facts. "
                        "Example: receipt(tx=75).",
             READ, (Param("tx", ("integer",), "a transaction id"),),
             "who, when, why and the custom facts of one transaction"),
    ToolSpec("schema", "Schema discovery: attributes with declared, effective and observed types, and shapes, "
                       "in pages. Example: schema(prefix=\"person/\").",
             READ, (
                 Param("prefix", ("string",), "keep the attributes whose name starts with it", None),
                 Param("include_system", ("boolean",), "list fgraph's own attributes too", False),
                 _page_limit("attributes and shapes"), _CURSOR),
             "`{basis_tx, digest, attributes, shapes, next_cursor, truncated}`: at most `limit` attributes and shapes "
             "together per page, every page at the first page's basis"),
    ToolSpec("explain", "The access plan a query would follow, without evaluating it. "
                        "Example: explain(q={\"find\": [\"?e\"], \"where\": [[\"?e\", \"person/name\", \"Ada\"]]}).",
             READ, (_QUERY, _ARGS),
             "the access plan `query` would follow, not evaluated"),
    ToolSpec("context", "What to know at the start of a session: one line per changed entity, newest record time "
                        "first (untimed imports after dated records), with its [Type], main text, rationale and "
                        "tags, within `limit` items and `budget` characters; `type` keeps some types (a comma "
                        "list), `entity` one entity. by=\"change\": every fact changed instead, grouped per "
                        "transaction with who, where and when. "
                        "Example: context(type=\"decision,preference\", since=\"7d\").",
             READ, (
                 Param("since", ("integer", "string"), "a transaction id, event UUID, RFC 3339 time or duration "
                                                       "such as `\"24h\"` (all by default; decision T2, docs/query.md)",
                       None),
                 Param("budget", ("integer",), "characters", CONTEXT_BUDGET, CONTEXT_MIN_BUDGET, CONTEXT_MAX_BUDGET),
                 Param("limit", ("integer",), "items", CONTEXT_LIMIT, 1, CONTEXT_MAX_LIMIT),
                 Param("entity", ("string", "integer"), "a name or id", None),
                 Param("by", ("string",), "one line per changed entity or per change", "entity",
                       choices=("change", "entity")),
                 Param("type", ("string",), "keep these types, a comma list (with `by=\"entity\"`)", None)),
             "`{basis_tx, since, items, left_out[, left_out_at_least], truncated, text[, more]}`: one line per "
             "changed entity, `[Type] text — because: … — tags: … — at … by … from FILE:LINE`, cut between items, "
             "the last line saying what was left out and naming the tool call that gets it "
             "(`context(by=\"entity\", since=64, limit=13, budget=4000)`) — text to put in a prompt (the same "
             "renderer as `fgraph context`, decisions C2 and C4, docs/cli.md). With `by=\"change\"` the changes "
             "instead, newest first, grouped per transaction under a header with when, who and where from. Ours: "
             "the published server has no such tool, so its default is the prompt block, as in the CLI"),
)

SPECS = {spec.name: spec for spec in TOOLS}


def listed(*, write: bool, allow_excise: bool = False) -> list[ToolSpec]:
    """The tools a server lists, in order: the write tools only with ``--write``, ``excise`` only
    with ``--allow-excise`` as well (decision M8 in docs/mcp.md)."""
    options = {"allow_excise": allow_excise}
    return [spec for spec in TOOLS if (write or not spec.needs_write) and (spec.opt_in is None or options[spec.opt_in])]


def proposing(spec: ToolSpec) -> ToolSpec:
    """A write tool as ``fgraph mcp --propose`` lists it: the same arguments, its description
    saying that it proposes, and annotations that destroy nothing (decision M10 in docs/mcp.md)."""
    return replace(spec, description=PROPOSAL_NOTE + spec.description, hints=PROPOSE)
