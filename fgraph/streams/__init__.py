"""streams — the portable streams: event/1 (``tail``, follow, ``apply``) and snapshot/1
(``snapshot``, ``restore``), and ``verify`` of both without a database.

May import: ``fgraph.core``. Never ops, query, db, the bridges or the faces.
"""
