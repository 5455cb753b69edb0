"""A mesh driven through its library API, as the CLI, HTTP and MCP transports drive it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from ax_mesh import Manifest, Mesh, ToolError, acquire_lease, add_seat, authenticate, call_tool
from ax_mesh import open_mesh as open_mesh_


@dataclass
class SeatHandle:
    harness: Harness
    name: str
    token: str
    generation: int

    def call(self, tool: str, **args: Any) -> dict[str, Any]:
        mesh = self.harness.mesh
        caller = authenticate(mesh, self.token, self.generation, self.name)
        return call_tool(mesh, caller, tool, args)

    def refused(self, tool: str, code: str, **args: Any) -> ToolError:
        with pytest.raises(ToolError) as caught:
            self.call(tool, **args)
        assert caught.value.code == code, caught.value.to_json()
        return caught.value

    def relapse(self) -> int:
        """Take a new execution lease (as a restarted runner would); returns the generation."""
        self.generation = acquire_lease(self.harness.mesh, self.name, "test", 600).generation
        return self.generation


class Harness:
    def __init__(self, environ: dict[str, str]) -> None:
        self.environ = environ
        self.mesh: Mesh = open_mesh_(environ)
        self._stores: set[str] = set()

    def close(self) -> None:
        self.mesh.close()

    def store(self, name: str) -> None:
        from libcommon import clock

        if name not in self._stores:
            self.mesh.store.add_store(name, "shared", None, clock.timestamp())
            self._stores.add(name)

    def seat(
        self,
        name: str,
        *,
        role: str = "agent",
        read: tuple[str, ...] = (),
        write: tuple[str, ...] = (),
        revise: tuple[str, ...] = (),
        message: tuple[str, ...] = (),
        connections: dict[str, list[str]] | None = None,
        timezone: str = "UTC",
        leased: bool = True,
    ) -> SeatHandle:
        """A new seat; ``leased=False`` leaves its execution lease to a runner."""
        stores: dict[str, dict[str, bool]] = {}
        for names, op in ((read, "read"), (write, "write"), (revise, "revise")):
            for store in names:
                self.store(store)
                stores.setdefault(store, {})[op] = True
        manifest = Manifest.model_validate(
            {
                "stores": stores,
                "message": list(message),
                "connections": connections or {},
                "timezone": timezone,
            }
        )
        _seat, token = add_seat(self.mesh, name, role, manifest)
        generation = acquire_lease(self.mesh, name, "test", 600).generation if leased else 0
        return SeatHandle(self, name, token, generation)
