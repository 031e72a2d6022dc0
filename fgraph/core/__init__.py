"""core: the format-v2 file and the write path, one flat package whose modules fall in six groups.

- format and files: ``layout``, ``genesis``, ``probe``, ``connection``, ``replica``, ``replica_follow``,
  ``memory_copy``, ``files``, ``sidecars``, ``docblocks``
- values and canonical JSON: ``values``, ``canonical``, ``checks``, ``hashing``, ``mappings``, ``types``
- names, identities and clocks: ``names``, ``identity``, ``timespec``, ``timepoints``
- the write path: ``session``, ``txn``, ``transact``, ``plan``, ``selectors``, ``operations``,
  ``constraints``, ``declare``, ``schema_cache``, ``replay``, ``replay_plan``, ``overlay``, ``rows``
- reads: ``catalog``, ``reads``, ``asof``, ``name_lookup``, ``stats``, ``stats_cache``, ``payload``, ``agreement``
- errors, limits and settings: ``errors``, ``sqlite_errors``, ``limits``, ``settings``

docs/architecture.md lists the modules under these groups, read from the lines above. The groups are
a reading order, not folders: the write path crosses them all (a plan reads values, names and the
catalog; the writer takes identities and clocks), so a folder per group would lengthen every
import without separating anything.

Each of core's rules has one home: one writer (``rows``), one transaction helper (``txn``), one
translation of SQLite's failures (``sqlite_errors``), one statement of each number (``limits``),
one reader of the environment (``settings``).

May import: the standard library, apsw and orjson — and nothing else of fgraph.
Everything above (streams, ops, query, db, bridges, mcp, cli) builds on this wing.
"""
