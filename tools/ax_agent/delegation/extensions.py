"""workerExtensions (issue 26): which of the host's running MCP servers every worker gets.

The user's config (never a workspace's) lists regular expressions. Each is
matched unanchored (``re.search``) against every subject of every server the
host session runs and that is ready: its source spec (``<name> <command args…>``
or ``<name> <url>``), its command path (as configured, and as found on PATH)
and the names of its tools (as the model sees them and as the server knows
them). A server that matches and registers no tools is not whitelisted, and
the session says so.

Python's ``re`` cannot be interrupted, and a pattern with catastrophic
backtracking (``(a+)+$`` against a long "aaaa…b") runs for longer than the
universe. So the matching runs in a child interpreter killed after
``WORKER_PATTERN_TIMEOUT_S``: a pattern that stalls costs that much, once, and
then nothing is whitelisted (fail closed) and the stalling pattern is named.
Each subject sent is cut at ``WORKER_PATTERN_SUBJECT_MAX_CHARS``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from libcommon import jsonio

if TYPE_CHECKING:
    from ..mcp_servers.client import ServerState

# The whole matching of every pattern against every subject, in the child interpreter.
WORKER_PATTERN_TIMEOUT_S = 2.0
# A subject longer than this is cut before it is matched.
WORKER_PATTERN_SUBJECT_MAX_CHARS = 4096

# The child: one line of subject indices per pattern, flushed, so a timeout names the
# pattern that was running.
_MATCHER = (
    "import json,re,sys\n"
    "d=json.load(sys.stdin)\n"
    "for p in d['patterns']:\n"
    "    r=re.compile(p)\n"
    "    print(json.dumps([i for i,s in enumerate(d['subjects']) if r.search(s)]),flush=True)\n"
)


class PatternStalled(Exception):
    """A pattern outlived the matching's time bound."""

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.pattern = pattern


def match_patterns(
    patterns: Sequence[str], subjects: Sequence[str], timeout_s: float | None = None
) -> list[set[int]]:
    """For each pattern, the indices of the subjects it finds (``re.search``).

    Raises ``PatternStalled`` naming the first pattern not done within the bound.
    """
    if not patterns or not subjects:
        return [set() for _ in patterns]
    request = {
        "patterns": list(patterns),
        "subjects": [subject[:WORKER_PATTERN_SUBJECT_MAX_CHARS] for subject in subjects],
    }
    bound = WORKER_PATTERN_TIMEOUT_S if timeout_s is None else timeout_s
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _MATCHER],
            input=jsonio.dumps(request),
            capture_output=True,
            timeout=bound,
            env={},
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        finished = (exc.stdout or b"").count(b"\n")
        raise PatternStalled(patterns[min(finished, len(patterns) - 1)]) from None
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(patterns):
        # The patterns were compiled when the config was loaded; a child that fails
        # anyway whitelists nothing.
        detail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"the pattern matcher failed: {detail[0][:200]}")
    return [set(jsonio.loads(line)) for line in lines]


@dataclass(frozen=True)
class Whitelisted:
    server: str
    # The tools as the model sees them (mcp__<server>__<tool>).
    tools: tuple[str, ...]
    pattern: str


@dataclass
class Whitelist:
    servers: list[Whitelisted] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def names(self) -> list[str]:
        return [entry.server for entry in self.servers]

    def event(self) -> dict[str, object]:
        data = {
            "servers": [{"server": e.server, "tools": list(e.tools)} for e in self.servers],
            "warnings": list(self.warnings),
        }
        return {"type": "custom", "kind": "worker-extensions", "data": data}


def subjects_of(state: ServerState) -> list[str]:
    """What a pattern is matched against for one server (see the module docstring)."""
    from ..mcp_servers.config import HttpEntry

    entry = state.spec.entry
    found: list[str] = []
    if isinstance(entry, HttpEntry):
        found.append(f"{state.name} {entry.url}")
    elif entry is not None:
        found.append(" ".join([state.name, entry.command, *entry.args]))
        found.append(entry.command)
        resolved = shutil.which(entry.command)
        if resolved is not None and resolved != entry.command:
            found.append(resolved)
    for tool in state.tools:
        found += [tool.name, tool.remote]
    return found


def resolve(
    patterns: Sequence[str], states: Sequence[ServerState], timeout_s: float | None = None
) -> Whitelist:
    """The running servers the patterns select, and a warning for each one refused."""
    result = Whitelist()
    ready = [state for state in states if state.state == "ready"]
    if not patterns:
        return result
    owners: list[int] = []
    subjects: list[str] = []
    for number, state in enumerate(ready):
        for subject in subjects_of(state):
            owners.append(number)
            subjects.append(subject)
    try:
        matched = match_patterns(patterns, subjects, timeout_s)
    except PatternStalled as exc:
        bound = WORKER_PATTERN_TIMEOUT_S if timeout_s is None else timeout_s
        result.warnings.append(
            f"workerExtensions pattern {exc.pattern[:80]!r} did not finish within "
            f"{bound:g} s (catastrophic backtracking?): no server is whitelisted; simplify it"
        )
        return result
    except (OSError, RuntimeError) as exc:
        result.warnings.append(f"workerExtensions: {exc}; no server is whitelisted")
        return result
    chosen: dict[int, str] = {}
    for pattern, hits in zip(patterns, matched, strict=True):
        if not hits:
            result.warnings.append(
                f"workerExtensions pattern {pattern[:80]!r} matches no MCP server this session runs"
            )
        for hit in sorted(hits):
            chosen.setdefault(owners[hit], pattern)
    for number, pattern in sorted(chosen.items()):
        state = ready[number]
        if not state.tools:
            result.warnings.append(
                f"workerExtensions pattern {pattern[:80]!r} matches the MCP server "
                f"{state.name!r}, which registers no tools: not whitelisted"
            )
            continue
        tools = tuple(tool.name for tool in state.tools)
        result.servers.append(Whitelisted(state.name, tools, pattern))
    return result
