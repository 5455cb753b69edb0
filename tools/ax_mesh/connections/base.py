"""What a connection is: the interface a tracker or code host implements for ax-mesh.

A connection (the offline file tracker here; Linear or GitHub later) names its
operations, runs one with a marker, and reads an operation's effect back by that marker
after a lost response. It never records anything: the gateway (``gateway.py``) writes
the operation ledger around every call and decides the outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from libcommon.errors import OperationFailed

# Created records carry this marker and the operation id, so that after a lost response
# the gateway can search for it (services such as Linear have no idempotency keys).
MARKER_PREFIX = "ax-mesh-op:"


def marker_for(operation_id: str) -> str:
    return f"{MARKER_PREFIX}{operation_id}"


class Params(BaseModel):
    """The base of every operation's parameters: strict and closed, so refusals name fields."""

    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


@dataclass(frozen=True)
class OperationSpec:
    name: str
    params: type[Params]
    description: str
    # A mutating operation may have been applied when its response is lost; a read has
    # nothing to apply, so losing its response is simply a failure.
    mutating: bool


@dataclass(frozen=True)
class Call:
    """Who calls, and the marker the connection puts on what it creates."""

    seat: str
    operation_id: str
    marker: str


@dataclass(frozen=True)
class Receipt:
    """The service's answer: an external id (issue identifier, project id) and the result."""

    external_id: str | None
    result: dict[str, Any] = field(default_factory=dict)


class Rejected(OperationFailed):
    """The service refused the request and applied nothing (a ``failed`` operation)."""


class LostResponse(OperationFailed):
    """The request may have been applied but no answer came back (timeout, dropped
    connection, a peer killed mid-call). Any other exception from ``invoke`` is treated
    the same way: only ``Rejected`` says that nothing happened."""


class Connection(Protocol):
    """One configured connection (``name``) of some ``kind``."""

    name: str
    kind: str

    def operations(self) -> Mapping[str, OperationSpec]: ...

    def invoke(self, operation: str, params: Params, call: Call) -> Receipt:
        """Run the operation; created records carry ``call.marker``.

        Raises ``Rejected`` when nothing was applied; anything else may have been applied.
        """
        ...

    def read_back(self, operation: str, params: Params, call: Call) -> Receipt | None:
        """The operation's effect if it can be found (by ``call.marker`` for a create, by
        the values it set for an update), else None. None never means "not applied":
        the effect may still appear, so the outcome stays ``unknown``."""
        ...
