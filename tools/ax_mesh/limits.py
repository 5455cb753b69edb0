"""ax-mesh's named limits (pinned in tests/test_limits.py)."""

from __future__ import annotations

# A tool's result, as JSON: lists page with a cursor and long reads stop early to fit.
RESULT_MAX_BYTES = 16 * 1024
# What a long read's text may take of a result, leaving room for the envelope.
READ_TEXT_MAX_BYTES = 12 * 1024
LIST_MAX_RESULTS = 100
WORK_LIST_ITEMS_MAX = 100
STATUS_SEATS_MAX = 20
CONTEXT_LINES_MAX = 5
SEARCH_QUERIES_MAX = 16
QUERY_MAX_CHARS = 512
# A full-text search ranks at most this many matching records, the newest first, so a
# word every record holds costs the same as a rare one; a cut search says "bounded".
SEARCH_RANK_MAX = 200
TAGS_MAX = 32
PATH_MAX_CHARS = 512
NOTE_MAX_CHARS = 4000
HANDOFF_ITEMS_MAX = 100
# One record's text: a note, a log, a summary; bigger artefacts belong in files. It also keeps
# a record's PostgreSQL tsvector under its 1 MiB limit.
RECORD_TEXT_MAX_BYTES = 256 * 1024

MESSAGE_BODY_MAX_BYTES = 12 * 1024
# Messages waiting for one recipient (queued or being delivered, woken or not).
INBOX_MAX_WAITING = 1000
DELIVERY_MAX_ATTEMPTS = 5
# A delivery lease: how long a runner holds a message before it is offered again.
DELIVERY_LEASE_S = 600.0
# Back-off after a failed attempt n (1-based): BASE * 2**(n-1), at most MAX.
DELIVERY_BACKOFF_BASE_S = 2.0
DELIVERY_BACKOFF_MAX_S = 300.0

# An execution lease a runner holds for a seat, renewed while it runs.
EXECUTION_LEASE_S = 120.0
EXECUTION_LEASE_MAX_S = 24 * 3600.0

# A work item keeps its newest log entries; every earlier revision stays in its history.
WORK_LOG_MAX = 200
# How many messages a turn's envelope carries along (queued with wake: false).
PASSIVE_PER_TURN_MAX = 50
