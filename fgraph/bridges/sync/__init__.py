"""``fgraph sync`` and ``excise --reach``: stores fanned into one another through files or a
message log.

``files`` syncs store to store, ``log`` through a message log, ``forgetting`` carries excisions
through a log, ``reach`` is ``excise --reach``; ``adapters/`` holds one module per log engine.
"""
