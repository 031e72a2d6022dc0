"""``fgraph import FORMAT FILE``: other tools' memory files into a store, idempotently.

``formats`` turns records into event/1 records, ``pipeline`` applies them in batches, ``mirror``
makes a store follow one source file.
"""
