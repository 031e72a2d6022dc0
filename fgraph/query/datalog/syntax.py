"""The query language's shape (spec 12 §2–§6): a query object becomes a tree of clauses, and
every variable is proven bound before any data is read.

Two depths of checking, because ``explain`` accepts what ``q`` refuses (spec 12 §9): the
shape and the binding of variables are always checked here; constants are checked when
they are resolved against the store (``terms``); ``order``, ``limit``/``offset``, unsafe
rule heads and mutual recursion only when ``strict`` (``q``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fgraph.core.checks import optional_int, strict_int
from fgraph.core.errors import QueryError
from fgraph.query.datalog.pull_syntax import parse_pattern

WILDCARD = "_"
PREDICATES = frozenset({"=", "!=", "<", "<=", ">", ">=", "contains", "starts-with"})
AGGREGATES = frozenset({"count", "count-distinct", "sum", "avg", "min", "max"})
QUERY_KEYS = frozenset({"find", "where", "in", "rules", "source", "order", "limit", "offset"})
SOURCES = ("current", "history")


def is_var(term) -> bool:
    return type(term) is str and term.startswith("?")


def _fail(message: str, hint: str) -> QueryError:
    return QueryError(message, hint)


# -- the tree ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pattern:
    """``[e, a, v]`` up to ``[e, a, v, tx, added]``; absent positions are wildcards."""

    ordinal: int
    e: object
    a: object
    v: object
    tx: object = WILDCARD
    added: object = WILDCARD
    arity: int = 3

    @property
    def variables(self) -> list[str]:
        seen: list[str] = []
        for term in (self.e, self.a, self.v, self.tx, self.added):
            if is_var(term) and term not in seen:
                seen.append(term)
        return seen


@dataclass(frozen=True)
class Predicate:
    """``[op, left, right]``: a test of bindings (§4.2)."""

    ordinal: int
    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Not:
    """``{"not": [...]}``: drops the bindings its clauses satisfy (§4.3)."""

    ordinal: int
    clauses: tuple


@dataclass(frozen=True)
class Or:
    """``{"or": [[...], ...]}``: the union of its branches (§4.4)."""

    ordinal: int
    branches: tuple  # of tuples of clauses
    binds: tuple     # the new variables every branch binds, sorted


@dataclass(frozen=True)
class RuleCall:
    """``{"rule": [name, arg, ...]}`` (§4.5)."""

    ordinal: int
    name: str
    args: tuple


@dataclass(frozen=True)
class Rule:
    """One definition of a rule: head variables and body clauses (§5)."""

    name: str
    head: tuple
    body: tuple


@dataclass(frozen=True)
class Find:
    """One find item: ``kind`` is ``var``, an aggregate name, or ``pull``."""

    kind: str
    var: str
    column: str
    pattern: object = None


@dataclass
class Query:
    """A parsed query object; ``bound`` holds the variables ``where`` and ``in`` bind outward."""

    find: list
    where: list
    inputs: list
    rules: dict = field(default_factory=dict)   # name -> [Rule]
    source: str = "current"
    order: list = field(default_factory=list)    # [(key, descending)]
    limit: int | None = None
    offset: int = 0
    bound: frozenset = frozenset()               # variables bound outward by where and in


# -- parsing ----------------------------------------------------------------------------------
def parse(raw, *, strict: bool = True) -> Query:
    """The query object ``raw`` as a ``Query``; ``strict=False`` is explain's lighter check."""
    if type(raw) is not dict:
        raise _fail(f"a query must be a JSON object, not {type(raw).__name__}",
                    'write {"find": [...], "where": [...]}')
    unknown = sorted(set(raw) - QUERY_KEYS)
    if unknown:
        raise _fail(f"unknown query key {unknown[0]!r}", "use find, where, in, rules, source, order, limit, offset")
    find = raw.get("find")
    if type(find) is not list or not find:
        raise _fail("find must be a non-empty array", 'write "find": ["?x"]')
    where = raw.get("where", [])
    if type(where) is not list:
        raise _fail("where must be an array of clauses", 'write "where": [["?e", "ns/attr", "?v"]]')
    inputs = raw.get("in", [])
    if type(inputs) is not list or not all(is_var(x) for x in inputs):
        raise _fail("in must be an array of variables", 'write "in": ["?min"] with "args": {"?min": 34}')
    source = raw.get("source", "current")
    if type(source) is not str or source not in SOURCES:
        raise _fail(f"source {source!r} is not valid", 'use "current" or "history"')
    rules = _rules(raw.get("rules", []), strict)
    query = Query(find=[], where=[], inputs=list(inputs), rules=rules, source=source)
    scope = Scope(rules)
    bound = set(inputs)
    query.where = scope.clauses(where, bound)
    query.bound = frozenset(bound)
    # explain checks find items' shape only; their binding is q's check (as the published runtime does)
    query.find = _find(find, bound if strict else None, scope.locals)
    if strict:
        _check_rule_graph(rules)
        query.order = _order(raw.get("order", []), bound, query.find, scope.locals)
        query.limit, query.offset = _window(raw)
    return query


def _rules(raw, strict: bool) -> dict:
    if raw is None:
        return {}
    if type(raw) is not list:
        raise _fail("rules must be an array of {head, body} objects", 'write "rules": [{"head": [...], "body": [...]}]')
    rules: dict[str, list[Rule]] = {}
    for rule in raw:
        if type(rule) is not dict or set(rule) != {"head", "body"}:
            raise _fail(f"rule {rule!r} must have exactly the keys head and body",
                        'write {"head": ["name", "?x"], "body": [...]}')
        head, body = rule["head"], rule["body"]
        if type(head) is not list or not head or type(head[0]) is not str \
                or not all(is_var(x) for x in head[1:]):
            raise _fail(f"rule head {head!r} must be a name followed by variables", 'write ["anc", "?a", "?d"]')
        if type(body) is not list:
            raise _fail(f"rule {head[0]!r} body must be an array of clauses", "write the body as an array")
        same = rules.setdefault(head[0], [])
        if same and len(same[0].head) != len(head) - 1:
            raise _fail(f"rule {head[0]!r} is defined with different arities", "give every definition one arity")
        same.append(Rule(head[0], tuple(head[1:]), tuple(body)))
    # bodies are parsed once every rule name is known (a body may call any rule)
    for name, definitions in rules.items():
        for k, rule in enumerate(definitions):
            scope = Scope(rules)
            bound: set[str] = set()
            body = tuple(scope.clauses(list(rule.body), bound))
            missing = [v for v in rule.head if v not in bound]
            if missing and strict:
                raise _fail(f"rule {name!r} head variable {missing[0]} is not bound by its body",
                            "bind every head variable in the body")
            definitions[k] = Rule(name, rule.head, body)
    return rules


def _check_rule_graph(rules: dict) -> None:
    """Self-recursion is evaluated to a fixed point; recursion through two or more rules is refused."""
    calls = {name: set() for name in rules}
    for name, definitions in rules.items():
        for rule in definitions:
            _collect_calls(rule.body, calls[name])
    for start in rules:
        seen, frontier = set(), [c for c in calls[start] if c != start]
        while frontier:
            current = frontier.pop()
            if current == start:
                raise _fail(f"rule {start!r} is mutually recursive", "recursion is allowed only in one rule calling itself")
            if current not in seen:
                seen.add(current)
                frontier.extend(calls.get(current, ()))


def _collect_calls(clauses, into: set) -> None:
    for clause in clauses:
        if isinstance(clause, RuleCall):
            into.add(clause.name)
        elif isinstance(clause, Not):
            _collect_calls(clause.clauses, into)
        elif isinstance(clause, Or):
            for branch in clause.branches:
                _collect_calls(branch, into)


class Scope:
    """Walks clauses in source order, proving every variable bound where it is used."""

    def __init__(self, rules: dict):
        self.rules = rules
        self.locals: set[str] = set()  # variables first met inside a not: invisible outside it

    def clauses(self, raw: list, bound: set) -> list:
        return [self.clause(item, k, bound) for k, item in enumerate(raw)]

    def clause(self, raw, ordinal: int, bound: set):
        if type(raw) is list:
            if raw and type(raw[0]) is str and raw[0] in PREDICATES:
                return self.predicate(raw, ordinal, bound)
            return self.pattern(raw, ordinal, bound)
        if type(raw) is dict and len(raw) == 1:
            ((key, body),) = raw.items()
            if key == "not":
                return self.negation(body, ordinal, bound)
            if key == "or":
                return self.disjunction(body, ordinal, bound)
            if key == "rule":
                return self.call(body, ordinal, bound)
        raise _fail(f"clause {raw!r} is not a pattern, predicate, not, or or rule call",
                    'write ["?e", "ns/attr", "?v"], ["<", "?a", 3] or {"not": [...]}')

    def pattern(self, raw: list, ordinal: int, bound: set) -> Pattern:
        if not 3 <= len(raw) <= 5:
            raise _fail(f"pattern {raw!r} must have 3 to 5 positions", "write [e, a, v], [e, a, v, tx] or [e, a, v, tx, added]")
        added = raw[4] if len(raw) == 5 else WILDCARD
        if not (type(added) is bool or is_var(added) or added == WILDCARD):
            raise _fail(f"pattern {raw!r}: added must be true, false or a variable", "write true, false or ?added")
        pattern = Pattern(ordinal, *raw[:3], raw[3] if len(raw) >= 4 else WILDCARD, added, len(raw))
        bound.update(pattern.variables)
        return pattern

    def predicate(self, raw: list, ordinal: int, bound: set) -> Predicate:
        if len(raw) != 3:
            raise _fail(f"predicate {raw[0]!r} takes exactly two operands", f'write ["{raw[0]}", "?x", 3]')
        for operand in raw[1:]:
            if is_var(operand) and operand not in bound:
                raise _fail(f"predicate {raw[0]!r} uses {operand}, which no earlier clause binds",
                            "bind the variable in a pattern before the predicate, or pass it with in")
        return Predicate(ordinal, raw[0], raw[1], raw[2])

    def negation(self, body, ordinal: int, bound: set) -> Not:
        if type(body) is not list or not body:
            raise _fail("not takes a non-empty array of clauses", 'write {"not": [["?e", "ns/attr", "x"]]}')
        inner = set(bound)
        clauses = self.clauses(body, inner)
        if not _mentions(clauses) & bound:
            raise _fail("not must share a variable bound before it", "bind one of its variables in an earlier clause")
        self.locals.update(inner - bound)
        return Not(ordinal, tuple(clauses))

    def disjunction(self, body, ordinal: int, bound: set) -> Or:
        if type(body) is not list or not body or not all(type(b) is list for b in body):
            raise _fail("or takes a non-empty array of branches, each an array of clauses",
                        'write {"or": [[clause, ...], [clause, ...]]}')
        branches, news = [], []
        for branch in body:
            inner = set(bound)
            locals_before = set(self.locals)
            branches.append(tuple(self.clauses(branch, inner)))
            news.append(inner - bound - (self.locals - locals_before))
        if any(n != news[0] for n in news):
            raise _fail("every or branch must bind the same new variables",
                        "bind the same variables in each branch (or bind them before the or)")
        bound.update(news[0])
        return Or(ordinal, tuple(branches), tuple(sorted(news[0])))

    def call(self, body, ordinal: int, bound: set) -> RuleCall:
        if type(body) is not list or not body or type(body[0]) is not str:
            raise _fail(f"rule call {body!r} must be [name, arg, ...]", 'write {"rule": ["anc", "?a", "?d"]}')
        name, args = body[0], body[1:]
        if name not in self.rules:
            raise _fail(f"rule {name!r} is not defined", "define it in rules, or check its name")
        arity = len(self.rules[name][0].head)
        if len(args) != arity:
            raise _fail(f"rule {name!r} takes {arity} arguments, called with {len(args)}",
                        "pass one argument per head variable")
        bound.update(a for a in args if is_var(a))
        return RuleCall(ordinal, name, tuple(args))


def _mentions(clauses) -> set:
    found: set[str] = set()
    for clause in clauses:
        if isinstance(clause, Pattern):
            found.update(clause.variables)
        elif isinstance(clause, Predicate):
            found.update(x for x in (clause.left, clause.right) if is_var(x))
        elif isinstance(clause, Not):
            found |= _mentions(clause.clauses)
        elif isinstance(clause, Or):
            for branch in clause.branches:
                found |= _mentions(branch)
        elif isinstance(clause, RuleCall):
            found.update(a for a in clause.args if is_var(a))
    return found


def _unbound(var: str, locals_: set, what: str) -> QueryError:
    if var in locals_:
        return _fail(f"{what} {var} is local to a not clause", "bind it outside the not to use it here")
    return _fail(f"{what} {var} is not bound by where or in", "bind it in a where clause or list it in in")


def _find(raw: list, bound: set | None, locals_: set) -> list:
    """The find items; ``bound`` None skips the binding check."""
    items = []
    for item in raw:
        if is_var(item):
            if bound is not None and item not in bound:
                raise _unbound(item, locals_, "find variable")
            items.append(Find("var", item, item))
        elif type(item) is list and item and item[0] == "pull":
            if len(item) != 3 or not is_var(item[1]):
                raise _fail(f"find item {item!r} must be [\"pull\", ?var, pattern]", 'write ["pull", "?e", ["*"]]')
            if bound is not None and item[1] not in bound:
                raise _unbound(item[1], locals_, "pull variable")
            items.append(Find("pull", item[1], f"pull({item[1]})", parse_pattern(item[2])))
        elif type(item) is list and item and type(item[0]) is str and item[0] in AGGREGATES:
            if len(item) != 2 or not is_var(item[1]):
                raise _fail(f"aggregate {item!r} takes exactly one variable", f'write ["{item[0]}", "?x"]')
            if bound is not None and item[1] not in bound:
                raise _unbound(item[1], locals_, "aggregate variable")
            items.append(Find(item[0], item[1], f"{item[0]}({item[1]})"))
        else:
            raise _fail(f"find item {item!r} is not a variable, an aggregate or a pull",
                        'write "?x", ["count", "?x"] or ["pull", "?e", ["*"]]')
    kinds = {f.kind for f in items}
    if "pull" in kinds and kinds & AGGREGATES:
        raise _fail("pull and aggregates cannot be mixed in one find", "run two queries")
    return items


def _order(raw, bound: set, find: list, locals_: set) -> list:
    if type(raw) is not list:
        raise _fail("order must be an array of [key, \"asc\"|\"desc\"]", 'write "order": [["?x", "asc"]]')
    columns = {f.column for f in find}
    keys = []
    for entry in raw:
        if type(entry) is not list or len(entry) != 2 or entry[1] not in ("asc", "desc") \
                or type(entry[1]) is not str:
            raise _fail(f"order entry {entry!r} must be [key, \"asc\"|\"desc\"]", 'write ["?x", "desc"]')
        key = entry[0]
        if type(key) is not str or not (key in bound or key in columns):
            if type(key) is str and key in locals_:
                raise _unbound(key, locals_, "order key")
            raise _fail(f"order key {key!r} is neither a bound variable nor a find column",
                        "order by a variable bound in where, or by a column such as count(?e)")
        keys.append((key, entry[1] == "desc"))
    return keys


def _window(raw: dict) -> tuple[int | None, int]:
    limit = optional_int(raw.get("limit"), "limit {value!r} must be an integer >= 0 or null", 'write "limit": 10',
                         low=0, error=_fail)
    offset = strict_int(raw.get("offset", 0), "offset {value!r} must be an integer >= 0", 'write "offset": 0', low=0,
                        error=_fail)
    return limit, offset
