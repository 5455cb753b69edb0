"""Web research in a session: the research pack (``ax_agent.research``) bound to ax-agent.

The pack is pure; this module is where it meets the session:

- ``research_state``: the one allowance of a session tree. Built the first
  time a research tool is used (from the user configuration's ``research``),
  rebuilt from the ``research.spent``/``research.settled`` events of the
  session's log and of every delegated task's log it started, so
  a resume cannot refill it; a researcher child is handed its parent's object
  (``delegation.child``), so parent and children draw on one allowance.
- ``provider_client``: the adapter for the configured host, its key from the
  environment and its route from ``providers.transport`` (the proxy and CA
  settings every model provider uses).
- ``bind_host``: the ``external`` fact's host, which only the configuration
  knows, so ax-policy decides the call against the host it will reach (a
  configured ``blockedHosts`` entry denies it).
- ``consent_lines``: what the approval question adds for a research call: the
  query or URLs verbatim, the call's bounds, the allowance left, the one host
  and whether a proxy carries the connection.
- ``child_grants``: a researcher's start inherits the person's answer "for the
  session" (or a durable grant) to ``web_search``, as session grants of the
  research tools; without one, its research calls ask, and a researcher's
  questions are declined. The allowance bounds every call either way.
- ``fold_findings``: ``RESEARCH.md`` in the project's memory folder.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libcommon import clock
from libcommon.errors import AxError

from .research.budget import ResearchBudget, Spend
from .research.errors import ResearchError
from .research.settings import ResearchSettings, api_key, research_settings

if TYPE_CHECKING:
    from ax_policy import DeclaredFacts, SessionGrant
    from libcommon.paths import StateLayout

    from .research.findings import Finding
    from .research.tavily import TavilyClient
    from .session import Session

# The research tools, and the one the person's "for the session" answer is given to.
RESEARCH_TOOLS = frozenset({"web_search", "web_extract", "record_source"})
EXTERNAL_RESEARCH_TOOLS = ("web_search", "web_extract")
CONSENT_TOOL = "web_search"


@dataclass
class ResearchState:
    settings: ResearchSettings
    budget: ResearchBudget


@dataclass
class ResearchLedger:
    """One session's own research (a child's is copied into its parent's log at its end)."""

    spent: Spend = field(default_factory=Spend)
    findings: list[dict[str, Any]] = field(default_factory=list)

    def events(self, group: str, task: str) -> list[dict[str, Any]]:
        common = {"group": group, "taskId": task}
        return [
            *({"type": "research.source", **common, **f} for f in self.findings),
            {
                "type": "research.captured",
                **common,
                **self.spent.as_json(),
                "findings": len(self.findings),
            },
        ]


def research_state(session: Session) -> ResearchState:
    """The session tree's allowance (see the module docstring); ``not-configured`` when
    the user configuration's ``research`` cannot be used."""
    if session.research is None:
        settings = research_settings(session.config.research)
        events = _spend_events(session.layout, session.id)
        session.research = ResearchState(settings, ResearchBudget.rebuilt(settings.limits, events))
    state: ResearchState = session.research
    return state


def _spend_events(layout: StateLayout, session_id: str) -> Iterator[Mapping[str, Any]]:
    """The session's events, then those of every delegated task it started.

    The tasks are the ``child`` sessions its own ``task.started`` events name (a
    child's log exists before that event is stored, and it spends nothing before
    its thread starts, which is after), so the rebuild reads exactly the logs that
    can hold this allowance's spend.
    """
    from ax_log import read_events

    children: list[str] = []
    for event in read_events(layout.session_log(session_id), session_id, lenient=True):
        if event.get("type") == "task.started" and isinstance(event.get("child"), str):
            children.append(event["child"])
        yield event
    for child in dict.fromkeys(children):
        try:
            path = layout.session_log(child)
        except AxError:
            # Not a session id (a hand-edited log): no log of ours can be behind it.
            continue
        if path.exists():
            yield from read_events(path, child, lenient=True)


def provider_client(session: Session, settings: ResearchSettings) -> TavilyClient:
    from .providers.transport import route
    from .research.tavily import TavilyClient

    key = api_key(settings, session.environ)
    way = route(settings.base_url, session.environ)
    return TavilyClient(settings.base_url, key, way.client_options(), way.scrub)


def bind_host(facts: DeclaredFacts, session: Session) -> DeclaredFacts:
    """``facts`` with the external fact's host set to the configured research host."""
    if facts.external is None:
        return facts
    try:
        host = research_state(session).settings.host
    except ResearchError:
        # The precheck refuses such a call before it is decided; the fact stays hostless.
        return facts
    return facts.model_copy(update={"external": facts.external.model_copy(update={"host": host})})


def consent_lines(session: Session, asked: list[str], cost: Spend) -> list[str]:
    """The approval question's research lines (see the module docstring)."""
    from libcommon.proxy import OVERRIDE_VAR, proxy_source

    state = research_state(session)
    settings = state.settings
    try:
        via = proxy_source(settings.base_url, session.environ, session.environ.get(OVERRIDE_VAR))
    except AxError:
        # A proxy variable that holds no URL: the call itself fails naming it.
        via = "a proxy variable that holds no usable URL"
    left = state.budget.remaining()
    return [
        *asked,
        f"this call at most: {cost.text()}",
        f"allowance left: {left.text()} (shared by this session and its researchers)",
        f"egress: the research tools reach one host, {settings.host}, and never fetch a URL "
        "themselves (the provider reads pages); this is the research tools' egress, not the "
        "harness's",
        "proxy: "
        + (
            f"a configured proxy ({via}) still carries this connection"
            if via
            else "none configured for this host (direct connection)"
        ),
    ]


def child_grants(parent: Session) -> list[SessionGrant]:
    """A researcher's starting grants (see the module docstring)."""
    from ax_policy import SessionGrant, list_durable_grants

    consented = parent.grants.holds(CONSENT_TOOL, "external")
    if not consented:
        try:
            durable = list_durable_grants(parent.layout.root, parent.workspace)
        except AxError:
            # A store that cannot be read grants nothing (fail closed): the child asks.
            durable = []
        consented = any(
            grant.kind == "external-tool" and grant.tool == CONSENT_TOOL for grant in durable
        )
    if not consented:
        return []
    return [
        SessionGrant.model_validate({"tool": tool, "class": "external"})
        for tool in EXTERNAL_RESEARCH_TOOLS
    ]


def research_file(layout: StateLayout) -> Any:
    from .research.notes import RESEARCH_FILE

    return layout.memory_dir / RESEARCH_FILE


def fold_findings(layout: StateLayout, new: list[Finding]) -> None:
    """Fold ``new`` into the project's RESEARCH.md, under its lock, atomically. With
    nothing new, an existing document only loses what has passed the horizon (a session
    start does this, so project memory never gives a stale note)."""
    from libcommon.atomic import atomic_write_bytes
    from libcommon.locks import file_lock

    from .research.notes import fold

    path = research_file(layout)
    if not new and not path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    today: dt.date = clock.now().date()
    with file_lock(path.with_name(path.name + ".lock")):
        try:
            current = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            current = ""
        folded = fold(current, new, today)
        if folded != current:
            atomic_write_bytes(path, folded.encode(), mode=0o644)
