"""The torture suite (issue 15): kill -9, faults below SQLite, full disks, concurrency, hostile input.

``make torture`` runs every family at full size (``FGRAPH_TORTURE=full``); ``make test`` runs the
same code at a bounded size. Every family drives public interfaces (the CLI and the library) on
real files with fixed seeds, and prints one summary line with its counts.
"""
