"""A call's context: the authenticated seat, its capabilities, the time, and paging.

Authority is decided here and nowhere else: ``Caller.can`` answers from the seat's
manifest (set by a person) and the one fixed rule that a personal store ``@<seat>`` is
its seat's alone. A store the seat cannot read is reported exactly like a store that
does not exist (``not_found``), so no answer tells the two apart.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from libcommon.errors import UsageError
from libcommon.redact import redact

from .errors import ToolError, not_found
from .limits import RESULT_MAX_BYTES
from .models import PERSONAL_PREFIX, Manifest
from .store import Actor, Record, Seat, Store

Op = Literal["read", "write", "revise"]
# Room a page leaves for the result's envelope (cursor, counts) under RESULT_MAX_BYTES.
PAGE_ENVELOPE_BYTES = 1024


@dataclass(frozen=True)
class Caller:
    seat: Seat
    manifest: Manifest
    actor: Actor

    @property
    def name(self) -> str:
        return self.seat.name

    @property
    def personal_store(self) -> str:
        return PERSONAL_PREFIX + self.seat.name

    def can(self, store: str, op: Op) -> bool:
        if store.startswith(PERSONAL_PREFIX):
            return store == self.personal_store
        grant = self.manifest.stores.get(store)
        return grant is not None and bool(getattr(grant, op))

    def stores(self, op: Op = "read") -> list[str]:
        names = [name for name in self.manifest.stores if self.can(name, op)]
        return sorted([self.personal_store, *names])

    def may_message(self, seat: str) -> bool:
        return seat in self.manifest.message


@dataclass
class Ctx:
    store: Store
    caller: Caller
    now: float
    ts: str

    def require(self, store: str, op: Op) -> None:
        """``not_found`` for a store the seat cannot read; ``forbidden`` for one it can
        read but not ``op``."""
        if not self.caller.can(store, "read") or self.store.get_store(store) is None:
            raise not_found(f"store {store!r}")
        if op != "read" and not self.caller.can(store, op):
            raise ToolError(
                "forbidden",
                f"this seat may not {op} in store {store!r}",
                hint="a person grants it with ax-mesh seat grant",
            )

    def record_by_locator(self, locator: str, include_archived: bool = False) -> Record:
        """The record a locator names (``R-<n>`` or ``<store>/<path>``), readable or not_found."""
        from .models import parse_record_id

        record_id = parse_record_id(locator)
        if record_id is not None:
            store = self.store.record_store(record_id)
            if store is None or not self.caller.can(store, "read"):
                raise not_found(f"record {locator}")
            record = self.store.get_record(store, record_id=record_id)
        else:
            store, _, path = locator.partition("/")
            if not self.caller.can(store, "read"):
                raise not_found(f"record {locator}")
            record = self.store.get_record(store, path=path)
            if record is None and include_archived:
                record = self.store.last_record_at(store, path)
        if record is None or (record.archived and not include_archived):
            raise not_found(f"record {locator}")
        return record


def redacted(text: str) -> str:
    """Secret-shaped substrings go before anything is stored (DESIGN.md, "Secrets")."""
    return redact(text)


def conflict(message: str, record: Record | None, **details: Any) -> ToolError:
    return ToolError(
        "conflict",
        message,
        hint="read it again, then retry with expected_revision set to current_revision",
        current_revision=0 if record is None else record.revision,
        author=None if record is None else record.author,
        **details,
    )


def record_summary(record: Record) -> dict[str, Any]:
    return {
        "record_id": f"R-{record.id}",
        "store": record.store,
        "path": record.path,
        "kind": record.kind,
        "size": record.size,
        "revision": record.revision,
        "author": record.author,
        "updated_at": record.updated_at,
    }


# ---- cursors and pages ---------------------------------------------------------


def fingerprint(tool: str, args: dict[str, Any]) -> str:
    """What a cursor is bound to: the tool and its arguments other than the cursor."""
    rest = {k: v for k, v in sorted(args.items()) if k != "cursor"}
    text = json.dumps([tool, rest], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_cursor(position: dict[str, int], print_: str) -> str:
    raw = json.dumps({**position, "f": print_}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str | None, print_: str, keys: tuple[str, ...]) -> dict[str, int]:
    if cursor is None:
        return dict.fromkeys(keys, 0)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        data = json.loads(raw)
        position = {key: int(data[key]) for key in keys}
        stamp = data["f"]
    except (ValueError, KeyError, TypeError):
        raise UsageError(
            "argument field 'cursor': not a cursor this tool gave",
            hint="pass the next_cursor of the previous page unchanged",
        ) from None
    if stamp != print_ or any(value < 0 for value in position.values()):
        raise UsageError(
            "argument field 'cursor': it belongs to a different query",
            hint="page with the same arguments the cursor came from",
        )
    return position


def encoded_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def fit_page(
    items: list[dict[str, Any]],
    wanted: int,
    budget: int = RESULT_MAX_BYTES - PAGE_ENVELOPE_BYTES,
) -> tuple[list[dict[str, Any]], bool]:
    """The longest prefix of ``items`` (at most ``wanted``) that fits ``budget`` bytes,
    and whether anything is left after it."""
    page: list[dict[str, Any]] = []
    used = 2
    for item in items[:wanted]:
        size = encoded_size(item) + 1
        if page and used + size > budget:
            return page, True
        page.append(item)
        used += size
    return page, len(items) > len(page)


def offset_page(
    tool: str,
    args: dict[str, Any],
    cursor: str | None,
    wanted: int,
    fetch: Callable[[int, int], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]], str | None]:
    """Fetch ``wanted + 1`` items from the cursor's offset, fit them, cursor the rest."""
    stamp = fingerprint(tool, args)
    offset = read_cursor(cursor, stamp, ("o",))["o"]
    items = fetch(wanted + 1, offset)
    page, more = fit_page(items, wanted)
    return page, make_cursor({"o": offset + len(page)}, stamp) if more else None
