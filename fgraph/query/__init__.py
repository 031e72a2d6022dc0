"""query — the read plane: Datalog ``q``, ``pull``, ``datoms`` and ``explain`` (spec 12);
``search`` comes next (issue 13).

``syntax`` parses and proves a query safe; ``planner`` orders clauses and picks access paths
(shared by explain and evaluation); ``terms`` resolves constants at a basis; ``engine``
evaluates ``where`` in SQLite over TEMP tables and counts work units; ``predicates``,
``pull``, ``results``, ``shaping`` turn bindings into rows; ``datoms`` pages the indexes;
``ask`` is the entry for ``q`` and ``explain``.

May import: ``fgraph.core`` and ``fgraph.streams``. Never ops, db, the bridges or the faces.
"""
