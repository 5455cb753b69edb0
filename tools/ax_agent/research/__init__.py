"""Web research (issue 25): a pure pack with its own failure vocabulary.

Nothing here imports the rest of ax-agent or another ax tool (only libcommon
and, lazily, httpx), which tests/test_architecture.py pins: the tools above
it (``web_search``, ``web_extract``, ``record_source``) are thin wrappers.

- ``errors``: the failure vocabulary (``ResearchError`` and its kinds);
- ``settings``: the one configured host, its key variable and the named limits;
- ``budget``: the one allowance shared by a session and its researchers;
- ``urls``: URLs as identifiers (a value sanitising would alter is refused);
- ``untrusted``: sanitising and the UNTRUSTED fence;
- ``tavily``: the provider adapter, the only code here that opens a connection;
- ``findings``: one falsifiable claim, its sources and a corroboration verdict;
- ``notes``: the RESEARCH.md fold with its 30-day horizon.
"""
