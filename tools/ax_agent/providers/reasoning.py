"""Reasoning blocks in the session log, and which of them an adapter may send.

A reasoning block is stored in the ``assistant.message`` event beside the text
and the tool calls, so a resumed session sends it back. Two things would break
it on the way: the log's redactor (a run of ciphertext can look like a key,
``-sk-…``) and any change at all, since the provider checks it. So the
ciphertext fields are stored as hex, which no redaction pattern matches, and
the block carries the sha256 of its item; a block whose item does not hash
back to it (the readable part held a secret and was redacted) is not rebuilt,
because sending it would be refused. The log keeps it either way.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypeGuard

from .base import ContentBlock, ReasoningBlock

BLOCK_TYPE = "reasoning"


def canonical(data: dict[str, Any]) -> bytes:
    """The item's bytes for hashing: key order and spacing are not part of an item."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8", "surrogatepass"
    )


def to_json(block: ReasoningBlock) -> dict[str, Any]:
    """The block as the session log stores it."""
    sealed = {
        name: block.data[name].encode("utf-8", "surrogatepass").hex()
        for name in block.opaque
        if isinstance(block.data.get(name), str)
    }
    return {
        "type": BLOCK_TYPE,
        "provider": block.provider,
        "model": block.model,
        "data": {name: value for name, value in block.data.items() if name not in sealed},
        "opaque": sealed,
        "sha256": hashlib.sha256(canonical(block.data)).hexdigest(),
    }


def from_json(item: dict[str, Any]) -> ReasoningBlock | None:
    """The block a log entry holds; None when it is malformed or no longer its item."""
    provider, model, data, sealed = (
        item.get("provider"),
        item.get("model"),
        item.get("data"),
        item.get("opaque", {}),
    )
    if not (
        isinstance(provider, str)
        and isinstance(model, str)
        and isinstance(data, dict)
        and isinstance(sealed, dict)
    ):
        return None
    whole = dict(data)
    try:
        for name, value in sealed.items():
            whole[name] = bytes.fromhex(value).decode("utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return None
    if hashlib.sha256(canonical(whole)).hexdigest() != item.get("sha256"):
        return None
    return ReasoningBlock(provider, model, whole, tuple(sealed))


def replayable(block: ContentBlock, provider: str, model: str) -> TypeGuard[ReasoningBlock]:
    """Whether ``provider``'s adapter sends ``block`` in a request to ``model``."""
    return isinstance(block, ReasoningBlock) and (block.provider, block.model) == (provider, model)
