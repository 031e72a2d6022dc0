"""``restore``: a snapshot/1 stream into a new store, verified as it goes by (spec 05 §2,
decision P1 in docs/snapshot.md).

``run`` drives the stream; ``parse`` reads a line, ``absent`` proves new names absent, ``registry``
writes receipts, ``lookups`` finds retracting events, ``proof`` settles doctor's checks record by record.
"""
