"""Clause order and access paths (spec 12 §9). The plan fixes both how a pattern reads the
indexes and what it is charged (§10), so ``explain`` and evaluation share it.

Predicates, ``not``, ``or`` and rule calls stay where they are written and split ``where``
into runs of patterns; inside a run the pattern with the best access given what is bound so
far goes first (ties to the lowest ordinal).
"""

from __future__ import annotations

from dataclasses import dataclass

from fgraph.query.datalog.syntax import WILDCARD, Not, Or, Pattern, Predicate, RuleCall, is_var

RANKS = {"eavt/exact": 1, "eavt/ea": 1, "eavt/batch": 1, "avet": 2, "eavt/e": 3, "avet/a": 4,
         "value-scan": 5, "scan": 6}
KINDS = {Pattern: "pattern", Predicate: "predicate", Not: "not", Or: "or", RuleCall: "rule"}


@dataclass(frozen=True)
class Step:
    """One clause in plan order: the variables bound before it and, for a pattern, its access."""

    clause: object
    bound: frozenset
    access: str


def _is_bound(term, bound) -> bool:
    if is_var(term):
        return term in bound
    return term != WILDCARD


def access(pattern: Pattern, bound) -> str:
    e, a, v = (_is_bound(t, bound) for t in (pattern.e, pattern.a, pattern.v))
    if e and a:
        if v:
            return "eavt/exact"
        # the batched lookup serves plain [e a v] patterns only (observed: a tx or added
        # position makes the published runtime plan eavt/ea)
        return "eavt/batch" if is_var(pattern.e) and pattern.arity == 3 else "eavt/ea"
    if e:
        return "eavt/e"
    if a:
        return "avet" if v else "avet/a"
    return "value-scan" if v else "scan"


def binds(clause) -> set:
    """The variables a clause binds for the clauses after it."""
    if isinstance(clause, Pattern):
        return set(clause.variables)
    if isinstance(clause, Or):
        return set(clause.binds)
    if isinstance(clause, RuleCall):
        return {a for a in clause.args if is_var(a)}
    return set()


def plan(clauses, bound) -> list[Step]:
    """The clauses in evaluation order, starting from the variables in ``bound``."""
    bound = set(bound)
    steps: list[Step] = []
    run: list[Pattern] = []

    def flush():
        while run:
            best = min(run, key=lambda p: (RANKS[access(p, bound)], p.ordinal))
            run.remove(best)
            steps.append(Step(best, frozenset(bound), access(best, bound)))
            bound.update(binds(best))

    for clause in clauses:
        if isinstance(clause, Pattern):
            run.append(clause)
            continue
        flush()
        steps.append(Step(clause, frozenset(bound), "filter" if isinstance(clause, Predicate) else "barrier"))
        bound.update(binds(clause))
    flush()
    return steps


def explain_steps(steps: list[Step]) -> tuple[list, list]:
    """The ``clauses`` and ``warnings`` of an explain (spec 12 §9)."""
    clauses, warnings = [], []
    for step in steps:
        clauses.append({"ordinal": step.clause.ordinal, "kind": KINDS[type(step.clause)], "access": step.access,
                        "bound": sorted(step.bound)})
        if step.access == "value-scan":
            warnings.append(f"clause {step.clause.ordinal} requires a value scan; bind entity or attribute earlier")
        elif step.access == "scan":
            warnings.append(f"clause {step.clause.ordinal} requires a fact scan; bind entity, attribute, or value "
                            "earlier")
    return clauses, warnings
