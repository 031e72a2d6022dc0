"""ops — maintenance and history-changing operations: ``backup``/``restore_backup``,
``doctor`` (checks and repair), ``excise`` with its physical ``scrub``, and ``undo``.

May import: ``fgraph.core`` and ``fgraph.streams``. Never query, db, the bridges or the faces.
"""
