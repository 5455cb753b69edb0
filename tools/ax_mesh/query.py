"""Web-search syntax for ``memory.search``: words, "quoted phrases", ``-excluded`` and ``OR``.

PostgreSQL reads the syntax itself (``websearch_to_tsquery``); SQLite's FTS5 gets the
same query translated here, every term quoted so nothing in it is FTS5 syntax. Both
backends refuse the same queries (one with no term to look for), so the contract holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .errors import ToolError

_TOKEN = re.compile(r'-?"[^"]*"?|\S+')


@dataclass
class WebQuery:
    # Alternatives (joined by OR), each a list of terms that must all match.
    groups: list[list[str]] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)


def parse_web_query(text: str) -> WebQuery:
    parsed = WebQuery(groups=[[]])
    for token in _TOKEN.findall(text):
        if token == "OR":
            if parsed.groups[-1]:
                parsed.groups.append([])
            continue
        negated = token.startswith("-") and len(token) > 1
        body = token[1:] if negated else token
        term = body.strip('"') if body.startswith('"') else body
        term = " ".join(re.findall(r"\w+", term))
        if not term:
            continue
        (parsed.excluded if negated else parsed.groups[-1]).append(term)
    parsed.groups = [group for group in parsed.groups if group]
    if not parsed.groups:
        raise ToolError(
            "invalid",
            f"the query {text!r} has no word to look for",
            hint='give at least one word or "phrase" that is not excluded with -',
        )
    return parsed


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def to_fts5(parsed: WebQuery) -> str:
    alternatives = " OR ".join(
        "(" + " AND ".join(_quote(term) for term in group) + ")" for group in parsed.groups
    )
    expression = f"({alternatives})"
    for term in parsed.excluded:
        expression = f"({expression} NOT {_quote(term)})"
    return expression
