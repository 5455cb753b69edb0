"""The provider adapter: the only code of the research pack that opens a connection.

It speaks Tavily's API to the one configured base URL: ``POST /search``
(``query``, ``search_depth``, ``max_results``; answer, raw content and images
off) and ``POST /extract`` (``urls``, ``extract_depth``), JSON bodies, the
key as ``Authorization: Bearer``. Page retrieval happens on the provider's
infrastructure: this adapter never connects anywhere but the base URL's host,
never follows a redirect, and reads at most ``RESPONSE_MAX_BYTES`` of an
answer. The HTTP client is built from ``client_options`` (the proxy and CAs
the caller resolved for this URL, ``trust_env`` off), so a configured proxy
still carries the connection. Every failure is a ``ResearchError`` whose text
went through ``scrub`` (the proxy URL and anything secret-shaped removed).

What comes back is checked: a result whose URL ``checked_url`` refuses is
withheld (counted, never shown), text is sanitised and cut to the per-call
bounds before anyone sees it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .budget import PAGE_MAX_CHARS, SNIPPET_MAX_CHARS, Depth
from .errors import ResearchError
from .untrusted import sanitise, sanitise_line
from .urls import checked_url

TIMEOUT_S = 30.0
RESPONSE_MAX_BYTES = 4 * 1024 * 1024
TITLE_MAX_CHARS = 200
ERROR_DETAIL_MAX_CHARS = 300


@dataclass(frozen=True)
class Hit:
    url: str
    title: str
    snippet: str
    published: str | None = None


@dataclass(frozen=True)
class Page:
    url: str
    text: str
    truncated: bool


@dataclass
class Found:
    hits: list[Hit] = field(default_factory=list)
    pages: list[Page] = field(default_factory=list)
    # URLs the provider could not read (extract), and results withheld by the URL check.
    failed: list[str] = field(default_factory=list)
    withheld: int = 0

    @property
    def chars(self) -> int:
        return sum(len(h.title) + len(h.snippet) for h in self.hits) + sum(
            len(p.text) for p in self.pages
        )


@dataclass(frozen=True)
class TavilyClient:
    base_url: str
    key: str = field(repr=False)
    client_options: Mapping[str, Any] = field(repr=False)
    scrub: Callable[[str], str] = field(repr=False)
    timeout_s: float = TIMEOUT_S

    def search(self, query: str, depth: Depth, max_results: int) -> Found:
        body = {
            "query": query,
            "search_depth": depth,
            "max_results": max_results,
            "include_answer": False,
            "include_raw_content": False,
            "include_images": False,
        }
        answer = self._post("/search", body)
        found = Found()
        for item in _list(answer, "results")[:max_results]:
            url = _text(item, "url")
            try:
                checked_url(url)
            except ResearchError:
                found.withheld += 1
                continue
            published = item.get("published_date")
            found.hits.append(
                Hit(
                    url=url,
                    title=sanitise_line(_text(item, "title", required=False), TITLE_MAX_CHARS),
                    snippet=sanitise(_text(item, "content", required=False), SNIPPET_MAX_CHARS),
                    published=sanitise_line(published, 40) if isinstance(published, str) else None,
                )
            )
        return found

    def extract(self, urls: list[str], depth: Depth) -> Found:
        answer = self._post("/extract", {"urls": urls, "extract_depth": depth})
        asked = set(urls)
        found = Found()
        for item in _list(answer, "results"):
            url = _text(item, "url")
            if url not in asked:
                # Only what was asked for is shown: a page the provider volunteers is not.
                found.withheld += 1
                continue
            raw = _text(item, "raw_content", required=False)
            text = sanitise(raw)
            found.pages.append(
                Page(url, text[:PAGE_MAX_CHARS], truncated=len(text) > PAGE_MAX_CHARS)
            )
        for item in _list(answer, "failed_results", required=False):
            failed = item.get("url")
            if isinstance(failed, str) and failed in asked:
                found.failed.append(failed)
        return found

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = self.base_url + path
        headers = {
            "Authorization": f"Bearer {self.key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        try:
            with (
                httpx.Client(
                    **dict(self.client_options), timeout=self.timeout_s, follow_redirects=False
                ) as client,
                client.stream("POST", url, json=body, headers=headers) as response,
            ):
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > RESPONSE_MAX_BYTES:
                        raise ResearchError(
                            "provider-malformed",
                            f"{url} answered more than {RESPONSE_MAX_BYTES:,} bytes; "
                            "the answer is not read",
                        )
                status = response.status_code
        except httpx.TimeoutException:
            raise ResearchError(
                "provider-timeout", f"{url} did not answer within {self.timeout_s:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise ResearchError(
                "provider-unreachable", self.scrub(f"{url} could not be reached: {exc}")
            ) from None
        if status != 200:
            detail = sanitise_line(
                bytes(data[:2000]).decode("utf-8", "replace"), ERROR_DETAIL_MAX_CHARS
            )
            raise ResearchError(
                "provider-status", self.scrub(f"{url} answered HTTP {status}: {detail}")
            )
        try:
            answer = json.loads(bytes(data))
        except ValueError:
            raise ResearchError("provider-malformed", f"{url} answered with no JSON") from None
        if not isinstance(answer, dict):
            raise ResearchError("provider-malformed", f"{url} answered JSON that is no object")
        return answer


def _list(answer: Mapping[str, Any], key: str, *, required: bool = True) -> list[dict[str, Any]]:
    value = answer.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ResearchError(
            "provider-malformed", f"the provider's {key!r} is not a list of objects"
        )
    return value


def _text(item: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = item.get(key)
    if isinstance(value, str):
        return value
    if value is None and not required:
        return ""
    raise ResearchError("provider-malformed", f"a result's {key!r} is not text")
