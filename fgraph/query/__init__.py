"""query — the read plane: Datalog ``q``, ``pull``, ``datoms``, ``explain`` and ``search``
(issues 12 and 13). Empty for now.

May import: ``fgraph.core`` and ``fgraph.streams``. Never ops, db or the face.
"""
