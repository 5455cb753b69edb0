"""A finding: one falsifiable claim, the URLs it rests on and a corroboration verdict.

``finding`` checks one as the model wrote it and refuses, naming why: a claim
that is empty or that sanitising would alter (it is later shown in
harness-written documents, so it is refused rather than rewritten), a source
``checked_url`` refuses, and ``corroborated`` resting on fewer than two
distinct sources (distinct by ``source_key``: host and path, so the same page
over http and https, or with another query, is one source). Its ``id`` is a
digest of the claim and its distinct sources, so recording it again (a
resume's re-fold) changes nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ResearchError
from .untrusted import sanitise_line
from .urls import checked_url, source_key

CLAIM_MAX_CHARS = 500
SOURCES_MAX = 8
NOTE_ID_HEX = 12

Verdict = Literal["corroborated", "single-source", "disputed", "unverified"]
VERDICTS: tuple[Verdict, ...] = ("corroborated", "single-source", "disputed", "unverified")
# Verdicts acceptance names as caveats: the finding rests on one source, or sources disagree.
WEAK_VERDICTS: frozenset[str] = frozenset({"single-source", "disputed", "unverified"})


@dataclass(frozen=True)
class Finding:
    id: str
    claim: str
    sources: tuple[str, ...]
    verdict: Verdict

    def as_json(self) -> dict[str, Any]:
        return {
            "noteId": self.id,
            "claim": self.claim,
            "sources": list(self.sources),
            "verdict": self.verdict,
            "distinctSources": len({source_key(url) for url in self.sources}),
        }


def finding(claim: str, sources: list[str], verdict: Verdict) -> Finding:
    """The finding as written, or ``claim-refused`` / ``url-refused`` naming why."""
    if not claim.strip():
        raise ResearchError("claim-refused", "the claim is empty")
    if len(claim) > CLAIM_MAX_CHARS:
        raise ResearchError("claim-refused", f"the claim is over {CLAIM_MAX_CHARS} characters")
    if sanitise_line(claim, CLAIM_MAX_CHARS) != claim:
        raise ResearchError(
            "claim-refused",
            "the claim holds line breaks, repeated or surrounding space, control, invisible "
            "or marker characters; write it as one plain line (it is refused, not rewritten)",
        )
    if not sources:
        raise ResearchError("claim-refused", "a finding names at least one source URL")
    if len(sources) > SOURCES_MAX:
        raise ResearchError("claim-refused", f"at most {SOURCES_MAX} sources per finding")
    checked = tuple(checked_url(url) for url in sources)
    distinct = sorted({source_key(url) for url in checked})
    if verdict == "corroborated" and len(distinct) < 2:
        raise ResearchError(
            "claim-refused",
            "'corroborated' needs two or more distinct sources (distinct by host and path); "
            f"this finding has {len(distinct)}: record it as 'single-source'",
        )
    digest = hashlib.sha256("\n".join([claim.casefold(), *distinct]).encode()).hexdigest()
    return Finding(f"r-{digest[:NOTE_ID_HEX]}", claim, checked, verdict)
