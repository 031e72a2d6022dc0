"""Every cap, bound and fixed marker of the contract, each stated once.

Spec references are to ``../shared/spec``. Modules import these names; none restates a
number that is defined here.
"""

from __future__ import annotations

import re

# 01 — the file
APPLICATION_ID = 1718055521          # PRAGMA application_id of a format-v2 file ("fgra")
USER_VERSION = 2                     # PRAGMA user_version: the format version
MEMORY = ":memory:"                  # the path of an in-memory database
GENESIS_TX = 64                      # transaction 64 is genesis; every exclusive lower bound starts there
FIRST_APP_ID = 65                    # the first id a user transaction can allocate

# 02 — values
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INSTANT_MIN = -62135596800000000     # 0001-01-01T00:00:00Z
INSTANT_MAX = 253402300799999999     # 9999-12-31T23:59:59.999999Z
MAX_VALUE_BYTES = 1048576            # one text, bytes or JSON value
MAX_NAME_BYTES = 512                 # names, attribute names and operation ids: 1–512 UTF-8 bytes

# 04/05 — streams
MAX_EVENT_BYTES = 8 * 1048576 + 65536           # one canonical event (decision 4: the LF not counted)
MAX_SNAPSHOT_LINE_BYTES = 2 * MAX_EVENT_BYTES + 65536
APPLY_BATCH_ROWS = 8192        # a bulk apply flushes its overlay past this many pending rows (memory bound)
RESTORE_BATCH_ROWS = 4096      # restore writes its pending fact rows past this many
BATCH_BYTES = 8 * 1048576      # either flushes past this many bytes of pending values, whatever the rows
EVENT_KEYS = frozenset({"asserted", "at", "by", "created", "event", "fgraph", "meta", "retracted", "source",
                        "tx_facts"})

# 12 — questions
DEFAULT_QUERY_BUDGET = 100_000       # work units of one query (--query-budget, FGRAPH_QUERY_BUDGET)
CONTEXT_BUDGET, CONTEXT_MAX_BUDGET, CONTEXT_MIN_BUDGET = 3000, 100_000, 100   # characters of `context`
CONTEXT_LIMIT, CONTEXT_MAX_LIMIT = 10, 10_000                                # items of `context`
CONTEXT_COUNT_CAP = CONTEXT_MAX_LIMIT + 1                                      # items `context` counts before "or more"
DATOMS_LIMIT, DATOMS_MAX_LIMIT = 100, 1000                                     # entries of one `datoms` page

# 13 — search
SEARCH_K, SEARCH_MAX_K = 10, 100              # hits of one search
SEARCH_EXPAND, SEARCH_MAX_EXPAND = 0, 3       # levels of ref neighbours a search adds

# writes in batches: `add --batch-size`, `import`, `sync`
MAX_BATCH_SIZE = 10_000              # records of one batch of `add` or `import` (one transaction each)
IMPORT_BATCH = 500                   # records per transaction of `import` unless told
SYNC_BATCH = 500                     # events per batch of `sync` unless told
SYNC_INTERVAL = 0.5                  # seconds between two polls of `sync --follow` unless told
SYNC_RETRY = 60.0                    # seconds a sync through a log retries an unavailable log before it gives up

# issue 29 item 7 — what one request of `fgraph browse` may take (docs/browse.md, Limits)
BROWSE_TIME_LIMIT_MS = 2000          # one statement, from its start to its last row (also Datasette's sql_time_limit_ms)
BROWSE_LENGTH_BYTES = 16 * 1048576   # SQLITE_LIMIT_LENGTH: any string, blob or row; above MAX_EVENT_BYTES, so a stored event reads
BROWSE_LIKE_PATTERN_BYTES = 100      # SQLITE_LIMIT_LIKE_PATTERN_LENGTH: one LIKE or GLOB pattern (its cost is length x pattern)
BROWSE_ANSWER_BYTES = 32 * 1048576   # text and blob bytes of one answer read out of SQLite
BROWSE_HEAP_BYTES = 128 * 1048576    # sqlite3_hard_heap_limit64 of the browse process's SQLite: all its statements together
BROWSE_STOP_SECONDS = 0.5            # after SIGTERM or Ctrl-C, how long running requests get to finish their answer

# issue 29 item 14 — one line of `fgraph mcp`'s stdio wire (docs/mcp.md, M7); above the largest event
MCP_MESSAGE_BYTES = 4 * MAX_EVENT_BYTES
# issue 47 item 7 — how deep one line of that wire may nest, measured before any parser reads it (M9): room for
# a document's 80 levels (spec 02 §5) inside the message, and below the 200 the SDK's parser stops at
MCP_MESSAGE_DEPTH = 100

# issue 51 — proposals an agent writes for a person to review (fgraph.bridges.proposals, docs/proposals.md)
MAX_PROPOSAL_LINE_BYTES = MCP_MESSAGE_BYTES + 2 * MAX_EVENT_BYTES + 65536   # one proposal/1 record: the call's
                                                                            # arguments and its event, escaped
MAX_PROPOSALS = 10_000                      # records one proposals file may hold pending
MAX_PROPOSALS_FILE_BYTES = 256 * 1048576    # bytes of a pending file fgraph reads whole
PROPOSALS_LOCK_SECONDS = 30.0               # how long a proposer or a decision waits for the file's lock

# 10 — what one MCP tool call may ask for and one answer may hold (fgraph/mcp/specs.py, docs/mcp.md)
MCP_RESPONSE_BYTES = 262_144                        # canonical JSON of one tool envelope or resource body (§3.4)
MCP_PAGE_LIMIT = 100                                # rows of a why, history, datoms or schema page: default and most;
                                                    # also the facts of an entity page and the items of a schema page (§6)
MCP_ABOUT_ATTRIBUTES, MCP_ABOUT_VALUES = 32, 32     # attributes of the entity `about` shows, and values of each
MCP_INCOMING_LIMIT = 100                            # referrers `about(incoming=true)` lists; datoms vaet pages the rest
MCP_RECEIPT_FACTS = 100                             # custom facts the tx resource shows of one receipt
MCP_CHANGES_EVENTS, MCP_CHANGES_BYTES = 100, 196_608   # events of one changes page, and their bytes (192 KiB)
MCP_EVENT_CHUNK = 131_072                           # bytes of a stored event one event resource page carries (128 KiB)
MCP_CURSOR_CHARS = 4096                             # characters of a cursor a tool or resource accepts
MCP_RECALL_K, MCP_RECALL_MAX_K = 10, 20             # hits of `recall`
MCP_RECALL_MAX_EXPAND = 2                           # levels of ref neighbours `recall` may add (none unless asked)
MCP_ABOUT_DEPTH, MCP_ABOUT_MAX_DEPTH = 1, 2         # levels of refs `about` pulls
MCP_QUERY_LIMIT, MCP_QUERY_MAX_LIMIT = 100, 1000    # rows of `query` when q states no limit, and at most

# 03 §7 — identifiers: lowercase, hyphenated RFC 4122, version 1–5, variant 10
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")


def is_subsequence(part: list[object], whole: object) -> bool:
    """Every item of ``part`` occurs in ``whole`` in the same order (created-list checks)."""
    if not isinstance(whole, list):
        return False
    remaining = iter(whole)
    return all(any(item == candidate for candidate in remaining) for item in part)
