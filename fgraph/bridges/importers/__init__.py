"""``fgraph import FORMAT FILE``: other tools' memory files into a store, idempotently.

``registry`` names the formats, one module each (``mcp_memory``, ``jsonl_log``), every one an
``items.Importer`` that turns its source into items built with ``records``; ``pipeline`` applies
them in batches and reports their health; ``mirror`` makes a store follow one source file.
"""
