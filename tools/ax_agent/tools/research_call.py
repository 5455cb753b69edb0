"""What web_search and web_extract share: the precheck, the spend around the wire, the view.

``precheck_cost`` runs before the policy (nobody is asked about a call that
cannot run): the configuration, the key and the allowance as it is now.
``spend_and_call`` runs at execute and checks every bound again: the
allowance is reserved whole or refused whole (``research.spent`` is recorded
before a byte is sent, so a crash leaves it charged at its worst case), the
provider is called, the unused characters are given back
(``research.settled``) and the result is shown sanitised and fenced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from libcommon.errors import AxError

from ..research.budget import Spend
from ..research.errors import ResearchError
from ..research.settings import api_key
from ..research.untrusted import FENCE_NOTE, fence
from ..webresearch import provider_client, research_state
from .base import ToolContext, ToolResult
from .common import error

if TYPE_CHECKING:
    from ..research.tavily import Found
    from ..session import Session


def refusal(exc: ResearchError) -> str:
    return f"[{exc.kind}] {exc.message}"


def precheck_cost(session: Session, cost: Spend) -> str | None:
    try:
        state = research_state(session)
        api_key(state.settings, session.environ)
        state.budget.check(cost)
    except ResearchError as exc:
        return refusal(exc)
    return None


def spend_and_call(
    ctx: ToolContext, tool: str, cost: Spend, call: Callable[[Any], Found], what: str
) -> ToolResult:
    session = ctx.session
    if session is None:
        return error(f"{tool} runs only inside a session")
    try:
        state = research_state(session)
        client = provider_client(session, state.settings)
        state.budget.reserve(cost)
    except ResearchError as exc:
        return error(refusal(exc))
    except AxError as exc:
        return error(exc.message)
    common = {"callId": ctx.call_id, "tool": tool}
    session.record(
        {"type": "research.spent", **common, "host": state.settings.host, **cost.as_json()}
    )
    try:
        found = call(client)
    except ResearchError as exc:
        _settle(session, state, common, cost, 0, exc.kind)
        return error(refusal(exc))
    used = min(found.chars, cost.chars)
    _settle(session, state, common, cost, used, "ok")
    left = state.budget.remaining()
    return ToolResult(
        content=_view(found) + f"\n\nallowance left: {left.text()}",
        summary=f"{what}: {len(found.hits) + len(found.pages)} result(s)",
    )


def _settle(
    session: Session, state: Any, common: dict[str, str], cost: Spend, used: int, outcome: str
) -> None:
    state.budget.settle(cost.chars, used)
    session.research_ledger.spent = (
        session.research_ledger.spent + cost - Spend(chars=cost.chars - used)
    )
    session.record({"type": "research.settled", **common, "chars": used, "outcome": outcome})


def _view(found: Found) -> str:
    parts = [FENCE_NOTE]
    for number, hit in enumerate(found.hits, 1):
        dated = f" (published {hit.published})" if hit.published else ""
        parts.append(
            f"[{number}] {hit.url}{dated}\n" + fence(hit.url, f"{hit.title}\n{hit.snippet}")
        )
    for number, page in enumerate(found.pages, 1):
        cut = " (cut at the per-page bound)" if page.truncated else ""
        parts.append(f"[page {number}] {page.url}{cut}\n" + fence(page.url, page.text))
    if found.failed:
        parts.append("the provider could not read: " + ", ".join(found.failed))
    if found.withheld:
        parts.append(
            f"{found.withheld} result(s) withheld: their URLs name no public source "
            "(loopback, private, bare IP) or were not asked for"
        )
    if len(parts) == 1:
        parts.append("no results")
    return "\n\n".join(parts)
