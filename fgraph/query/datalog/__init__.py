"""Datalog ``q``, ``explain`` and ``pull`` (spec 12): ``syntax`` parses and proves a query safe,
``planner`` orders clauses and picks access paths, ``engine`` evaluates ``where`` in SQLite,
``shaping``/``results`` turn bindings into rows, ``ask`` is the entry point.
"""
