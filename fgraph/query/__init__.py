"""query — the read plane: every question asked of a store at a basis; it never writes a row.

``datalog/`` is ``q``, ``explain`` and ``pull`` (spec 12); ``datoms`` pages the indexes (spec 12
§8); ``schema`` and ``manifest`` are the schema surface (spec 13 §11–§14); ``search/`` is keyword,
vector and entity search (spec 13); ``context/`` renders recent changes for a prompt;
``incoming`` finds what refers to an entity; ``browse/`` holds the read-only SQL of ``fgraph
browse``; ``budget`` is the work budget every read is charged against.

May import: ``fgraph.core`` and ``fgraph.streams``. Never ops, db, the bridges or the faces.
"""
