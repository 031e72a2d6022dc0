"""Evaluation of ``where`` in SQLite, a relation of bindings at a time (spec 12 §4–§5, §10).

Every intermediate relation is a TEMP table of distinct bindings (a ``(tag, value)`` column
pair per variable, rows in first-seen order). Each clause is one set-based statement over the
previous relation: a pattern joins it with ``fgraph_facts`` through the access path the
planner chose, with constants and bound values as parameters or columns, never as text; a
predicate filters it through one registered SQL function; ``not`` anti-joins the rows its body
satisfies; ``or`` unions its branches; a rule call joins the rule's relation, computed once
per query and, for a rule calling itself, iterated to a fixed point in SQLite.

Work units (spec 12 §10) are counted before each step with the same join restricted to the
access path's key: examined datoms times incoming bindings; a predicate costs one unit per
binding; a rule call costs its body's work per fixed-point round plus one unit per (binding,
rule row) pair, our formula where the spec only samples the published runtime's (§14.1).
"""

from __future__ import annotations

import itertools

from fgraph.core.asof import visible_at
from fgraph.core.values import TAG_BOOL, TAG_REF
from fgraph.query.datalog import predicates
from fgraph.query.datalog.planner import access as planner_access, binds, plan
from fgraph.query.datalog.syntax import WILDCARD, Not, Or, Pattern, Predicate, RuleCall, is_var
from fgraph.query.budget import WorkBudget
from fgraph.query.datalog.terms import NO_MATCH, Terms

# which pattern positions an access path reads by key (spec 12 §9)
ACCESS_KEYS = {"eavt/exact": "eav", "eavt/ea": "ea", "eavt/batch": "ea", "avet": "av", "eavt/e": "e",
               "avet/a": "a", "value-scan": "", "scan": ""}
_names = itertools.count()


class Relation:
    """A TEMP table of distinct bindings; ``vars[k]`` lives in columns ``t{k}``, ``v{k}``."""

    def __init__(self, table: str, variables: list):
        self.table, self.vars = table, list(variables)
        self.size = 0  # rows, kept by Engine.insert (so no count(*) is needed)
        self.index = {var: k for k, var in enumerate(self.vars)}

    def columns(self, alias: str = "") -> list[str]:
        p = f"{alias}." if alias else ""
        return [f"{p}{c}{k}" for k in range(len(self.vars)) for c in ("t", "v")]

    def pair(self, var: str, alias: str = "b") -> tuple[str, str]:
        k = self.index[var]
        return f"{alias}.t{k}", f"{alias}.v{k}"


class Engine:
    """One query's evaluation: its TEMP tables, its rule relations and the work it has spent."""

    def __init__(self, conn, terms: Terms, basis: int, latest: int, source: str, budget: int, rules: dict):
        self.conn, self.terms, self.basis, self.source = conn, terms, basis, source
        self.latest, self.at_latest = latest, basis >= latest
        self.work = WorkBudget(budget, "query", "narrow the query (bind an entity or attribute earlier, add limits)")
        self.charge = self.work.charge
        self.rules, self.rule_tables = rules, {}
        self.tables: list[str] = []
        self._visible_count = None
        predicates.register(conn, terms)

    # -- tables and budget --------------------------------------------------------------
    def relation(self, variables: list) -> Relation:
        table = f"temp.fgraph_q{next(_names)}"
        rel = Relation(table, variables)
        cols = ["o INTEGER DEFAULT 0"] + rel.columns()
        unique = ", ".join(["o"] + rel.columns())
        self.conn.execute(f"CREATE TABLE {table} ({', '.join(cols)}, UNIQUE ({unique}))")
        self.tables.append(table)
        return rel

    def unit(self, variables=(), row=()) -> Relation:
        rel = self.relation(list(variables))
        holes = ", ".join(["0"] + ["?"] * len(row))
        self.conn.execute(f"INSERT INTO {rel.table} ({', '.join(['o'] + rel.columns())}) VALUES ({holes})", row)
        rel.size = 1
        return rel

    def insert(self, out: Relation, select: list, rest: str, params=()) -> None:
        """``INSERT OR IGNORE`` the selected binding columns into ``out`` (duplicates collapse)."""
        self.conn.execute(f"INSERT OR IGNORE INTO {out.table} ({', '.join(['o'] + out.columns())}) "
                          f"SELECT {', '.join(['0'] + select)} {rest}", params)
        out.size += self.conn.changes()

    @staticmethod
    def count(rel: Relation) -> int:
        return rel.size

    def drop(self, rel: Relation) -> None:
        """Drop an intermediate relation now: a small TEMP schema keeps every statement cheap to prepare."""
        if rel.table in self.tables and rel not in self.rule_tables.values():
            self.tables.remove(rel.table)
            self.conn.execute(f"DROP TABLE {rel.table}")

    def close(self) -> None:
        for table in self.tables:
            self.conn.execute(f"DROP TABLE IF EXISTS {table}")
        self.tables.clear()

    # -- clauses ------------------------------------------------------------------------
    def run(self, clauses, rel: Relation) -> Relation:
        steps = plan(clauses, rel.vars)
        given = rel
        for k, step in enumerate(steps):
            if self.count(rel) == 0:
                # Nothing flows on: the remaining clauses are not evaluated (nor are their constants
                # resolved, as in the published runtime); the result still has their variables.
                later = [v for s in steps[k:] for v in sorted(binds(s.clause)) if v not in rel.index]
                empty = self.relation(rel.vars + list(dict.fromkeys(later)))
                if rel is not given:
                    self.drop(rel)
                return empty
            before = rel
            clause = step.clause
            if isinstance(clause, Pattern):
                rel = self.pattern(clause, step.access, rel)
            elif isinstance(clause, Predicate):
                rel = self.predicate(clause, rel)
            elif isinstance(clause, Not):
                rel = self.negation(clause, rel)
            elif isinstance(clause, Or):
                rel = self.disjunction(clause, rel)
            else:
                rel = self.call(clause, rel)
            if before is not given and before is not rel:
                self.drop(before)
        return rel

    def _branches(self, added):
        """(visibility, datom tx, added) of each kind of datom a pattern may read."""
        b = self.basis
        if self.source == "current":
            live = visible_at(b, self.latest, "f")
            branches = [(live, "f.tx", "1")]
        else:
            branches = [(f"f.tx <= {b}", "f.tx", "1"), (f"f.rx IS NOT NULL AND f.rx <= {b}", "f.rx", "0")]
        if type(added) is bool:
            branches = [x for x in branches if x[2] == ("1" if added else "0")]
        return branches

    @staticmethod
    def _index(access: str, visible: str) -> str:
        """The index the access path reads, named so SQLite's planner cannot prefer a worse one
        (TEMP tables have no statistics): live EAVT at the latest basis, else the history index."""
        if access.startswith("eavt"):
            return " INDEXED BY fgraph_eavt" if visible == "f.rx IS NULL" else " INDEXED BY fgraph_hist"
        if access.startswith("avet"):
            return " INDEXED BY fgraph_avet"
        return ""

    def pattern(self, p: Pattern, access: str, rel: Relation, scale: int = 1) -> Relation:
        """Join ``rel`` with the pattern's datoms; ``scale`` bindings stand behind each row of ``rel``
        (see ``paired``), so the units charged are ``scale`` times those examined."""
        if rel.size > 1 and not set(p.variables) & set(rel.index):
            return self.paired(p, access, rel)
        where = f"pattern {p.ordinal}"
        constants = {}
        for pos, term in (("e", p.e), ("a", p.a), ("v", p.v), ("tx", p.tx)):
            if term == WILDCARD or is_var(term):
                continue
            if pos == "a":
                found = self.terms.attribute(term, where)
            elif pos == "v":
                found = self.terms.value(term, where)
            else:
                found = self.terms.entity(term, where)
            if found is NO_MATCH:
                return self.relation(rel.vars + [v for v in p.variables if v not in rel.index])
            constants[pos] = found
        new_vars = [v for v in p.variables if v not in rel.index]
        out = self.relation(rel.vars + new_vars)
        units, statements = 0, []
        remaining = (self.work.limit - self.work.used) // scale
        for visible, dtx, added in self._branches(p.added):
            hint = self._index(access, visible)
            exprs = {"e": ("0", "f.e"), "a": ("0", "f.a"), "v": ("f.t", "f.v"), "tx": ("0", dtx),
                     "added": (str(TAG_BOOL), added)}
            conds, keys, params, first = [visible], {}, [], {}
            for pos, term in (("e", p.e), ("a", p.a), ("v", p.v), ("tx", p.tx), ("added", p.added)):
                t_expr, v_expr = exprs[pos]
                if term == WILDCARD or (pos == "added" and type(term) is bool):
                    continue
                args: list = []
                if not is_var(term):
                    found = constants[pos]
                    if pos == "v":
                        cond, args = f"{t_expr} = ? AND {v_expr} = ?", [found[0], found[1]]
                    else:
                        cond, args = f"{v_expr} = ?", [found]
                elif term in rel.index:
                    bt, bv = rel.pair(term)
                    cond = f"{bt} = {t_expr} AND {v_expr} = {bv}"
                elif term in first:  # repeated inside this pattern: one value
                    conds.append(f"{t_expr} = {first[term][0]} AND {v_expr} = {first[term][1]}")
                    continue
                else:
                    first[term] = (t_expr, v_expr)
                    continue
                conds.append(cond)
                params += args
                keys[pos] = (cond, args)
            units += self._examined(p, access, rel, visible, hint, keys, remaining - units)
            if units > remaining:
                break  # counted past the budget: the charge below refuses the query
            select = rel.columns("b") + [x for var in new_vars for x in first[var]]
            statements.append((select, added, f"FROM {rel.table} b, fgraph_facts f{hint} WHERE {' AND '.join(conds)}",
                               params))
        self.charge(units * scale)
        if len(statements) == 1:
            select, _, rest, params = statements[0]
            self.insert(out, select, f"{rest} ORDER BY b.rowid, f.id", params)
        elif statements:
            # History datoms meet each binding in fact order, each fact's assertion followed by its
            # retraction, as the published runtime evaluates them; ties in `order` keep this order.
            width = len(statements[0][0])
            names = [f"c{k}" for k in range(width)]
            parts, params = [], []
            for select, added, rest, args in statements:
                aliased = [f"{expr} AS {name}" for expr, name in zip(select, names)]
                keys = ["b.rowid AS k0", "f.id AS k1", f"{added} AS k2"]
                parts.append(f"SELECT {', '.join(aliased + keys)} {rest}")
                params += args
            self.insert(out, names, f"FROM ({' UNION ALL '.join(parts)}) ORDER BY k0, k1, k2 DESC", params)
        return out

    def paired(self, p: Pattern, access: str, rel: Relation) -> Relation:
        """A pattern that shares no variable with the bindings (a cross product): its datoms are read
        once, for one binding, and charged once per binding, then paired with every binding in
        order, so the time is the units', not the bindings' times the attribute's whole history
        (retracted datoms share the index range). Rows and order are those of the direct join:
        bindings in order, each with the pattern's distinct matches in first-seen order."""
        one = self.unit()
        matches = self.pattern(p, access, one, scale=rel.size)
        out = self.relation(rel.vars + matches.vars)
        if matches.size:
            self.insert(out, rel.columns("b") + matches.columns("m"),
                        f"FROM {rel.table} b CROSS JOIN {matches.table} m ORDER BY b.rowid, m.rowid")
        self.drop(matches)
        self.drop(one)
        return out

    def _examined(self, p: Pattern, access: str, rel: Relation, visible: str, hint: str, keys: dict,
                  cap: int) -> int:
        """The datoms one branch of a pattern examines, summed over the incoming bindings (§10),
        charged as the published runtime charges them: the access path's key, narrowed by a bound
        transaction position; a binding whose entity, attribute or transaction variable holds a
        plain value (not an entity) reads as if that position were unbound.

        Counting stops once it passes ``cap`` (the budget left): the answer is then some number
        above ``cap``, enough to refuse the query, so a pattern over a cross product costs about
        the budget to refuse, not the product (issue 52)."""
        entity_vars = [(pos, term) for pos, term in (("e", p.e), ("a", p.a), ("tx", p.tx))
                       if pos in keys and is_var(term)]
        tags = [f"({rel.pair(term)[0]} = {TAG_REF})" for _, term in entity_vars]
        if entity_vars:
            kinds = self.conn.execute(f"SELECT DISTINCT {', '.join(tags)} FROM {rel.table} b").fetchall()
        else:
            kinds = [()]
        units = 0
        for kind in kinds:
            plain = {term for (_, term), is_entity in zip(entity_vars, kind) if not is_entity}
            path = planner_access(p, set(rel.index) - plain) if plain else access
            wanted = set(ACCESS_KEYS[path]) | ({"tx"} if "tx" in keys and p.tx not in plain else set())
            filters = [f"{tag} = {int(is_entity)}" for tag, is_entity in zip(tags, kind)]
            key_conds, key_params = [visible], []
            for pos in ("e", "a", "v", "tx"):
                if pos in wanted and pos in keys:
                    key_conds.append(keys[pos][0])
                    key_params += keys[pos][1]
            if len(key_conds) > 1:
                index = hint if path == access else ""
                # CROSS JOIN keeps the bindings outside, as the pattern's own statement reads them:
                # left free, SQLite may walk the attribute's whole range and probe the bindings
                # from it (a point join over 1,000,000 transactions: 95 ms, not 0.02; issue 34)
                units += self._at_most(f"SELECT 1 FROM {rel.table} b CROSS JOIN fgraph_facts f{index} WHERE "
                                       + " AND ".join(key_conds + filters), key_params, cap - units)
            else:
                bindings = self.count(rel) if not filters else self.conn.execute(
                    f"SELECT count(*) FROM {rel.table} b WHERE {' AND '.join(filters)}").fetchone()[0]
                if bindings:
                    units += bindings * self._at_most(f"SELECT 1 FROM fgraph_facts f WHERE {visible}", [],
                                                      (cap - units) // bindings)
            if units > cap:
                break
        return units

    def _at_most(self, select: str, params: list, most: int) -> int:
        """The rows ``select`` yields, counted up to ``most`` + 1 and no further."""
        return self.conn.execute(f"SELECT count(*) FROM ({select} LIMIT ?)", [*params, max(most, 0) + 1]).fetchone()[0]

    def predicate(self, p: Predicate, rel: Relation) -> Relation:
        where = f"predicate {p.ordinal}"
        operands, params = [], [p.op]
        for term in (p.left, p.right):
            if is_var(term):
                operands += rel.pair(term)
            else:
                tag, stored = predicates.constant(self.terms, term, where)
                operands += ["?", "?"]
                params += [tag, stored]
        self.charge(self.count(rel))
        out = self.relation(rel.vars)
        self.insert(out, rel.columns("b"), f"FROM {rel.table} b WHERE fgraph_q_test(?, {', '.join(operands)}) "
                    "ORDER BY b.rowid", params)
        return out

    def negation(self, n: Not, rel: Relation) -> Relation:
        marker = f"\0not{next(_names)}"
        seed = self.relation(rel.vars + [marker])
        self.insert(seed, rel.columns("b") + ["0", "b.rowid"], f"FROM {rel.table} b ORDER BY b.rowid")
        satisfied = self.run(n.clauses, seed)
        _, rowid = satisfied.pair(marker, satisfied.table)
        out = self.relation(rel.vars)
        self.insert(out, rel.columns("b"), f"FROM {rel.table} b WHERE b.rowid NOT IN "
                    f"(SELECT {rowid} FROM {satisfied.table}) ORDER BY b.rowid")
        self.drop(satisfied)
        self.drop(seed)
        return out

    def disjunction(self, o: Or, rel: Relation) -> Relation:
        out = self.relation(rel.vars + [v for v in o.binds if v not in rel.index])
        for branch in o.branches:
            result = self.run(branch, rel)
            select = [x for var in out.vars for x in result.pair(var, "r")]
            self.insert(out, select, f"FROM {result.table} r ORDER BY r.rowid")
            if result is not rel:
                self.drop(result)
        return out

    # -- rules --------------------------------------------------------------------------
    def rule_relation(self, name: str) -> Relation:
        if name in self.rule_tables:
            return self.rule_tables[name]
        definitions = self.rules[name]
        arity = len(definitions[0].head)
        table = self.relation([f"\0{name}\0{k}" for k in range(arity)])
        self.rule_tables[name] = table  # a body calling this rule reads the relation as it grows
        while True:
            before = self.count(table)
            for rule in definitions:
                seed = self.unit()
                result = self.run(rule.body, seed)
                select = [x for var in rule.head for x in result.pair(var, "r")]
                self.insert(table, select, f"FROM {result.table} r ORDER BY r.rowid")
                self.drop(result)
                self.drop(seed)
            if self.count(table) == before:  # the round that finds nothing new is charged too
                return table

    def call(self, c: RuleCall, rel: Relation) -> Relation:
        where = f"rule call {c.ordinal}"
        table = self.rule_relation(c.name)
        conds, params, first = [], [], {}
        for k, arg in enumerate(c.args):
            rt, rv = f"r.t{k}", f"r.v{k}"
            if arg == WILDCARD:
                continue
            if is_var(arg):
                if arg in rel.index:
                    bt, bv = rel.pair(arg)
                    conds.append(f"{rt} = {bt} AND {rv} = {bv}")
                elif arg in first:
                    conds.append(f"{rt} = {first[arg][0]} AND {rv} = {first[arg][1]}")
                else:
                    first[arg] = (rt, rv)
                continue
            if type(arg) is str:  # a bare string matches the text and the entity of that name (§4.5)
                tag, stored = self.terms.value(arg, where)
                ident = self.terms.entity(arg, where)
                conds.append(f"(({rt} = ? AND {rv} = ?) OR ({rt} = {TAG_REF} AND {rv} = ?))")
                params += [tag, stored, ident if ident is not NO_MATCH else 0]
                continue
            found = self.terms.value(arg, where)
            if found is NO_MATCH:
                conds.append("0")
                continue
            conds.append(f"{rt} = ? AND {rv} = ?")
            params += list(found)
        out = self.relation(rel.vars + list(first))
        self.charge(self.count(rel) * self.count(table))
        select = rel.columns("b") + [x for var in first for x in first[var]]
        self.insert(out, select, f"FROM {rel.table} b, {table.table} r WHERE {' AND '.join(conds) or '1'} "
                    "ORDER BY b.rowid, r.rowid", params)
        return out


def _calls(clauses, name: str) -> bool:
    for clause in clauses:
        if isinstance(clause, RuleCall) and clause.name == name:
            return True
        if isinstance(clause, Not) and _calls(clause.clauses, name):
            return True
        if isinstance(clause, Or) and any(_calls(b, name) for b in clause.branches):
            return True
    return False
