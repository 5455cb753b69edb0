"""ax-mesh serve: the same catalogue and authority over HTTP on loopback."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from axtest import tool_path
from mesh.meshtest import Harness, SeatHandle

from ax_mesh.serve import check_loopback
from libcommon.errors import UsageError


@pytest.fixture
def server(state_dir: object) -> Iterator[tuple[str, Harness]]:
    import os

    env = {"AX_STATE_DIR": str(state_dir), "PATH": os.environ.get("PATH", "")}
    harness = Harness(env)
    proc = subprocess.Popen(
        [tool_path("mesh"), "serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        yield url, harness
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        harness.close()


def http(
    url: str, seat: SeatHandle | None, body: Any = None, generation: int | None = None
) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json"}
    if seat is not None:
        headers["Authorization"] = f"Bearer {seat.token}"
        headers["X-Ax-Mesh-Lease"] = str(seat.generation if generation is None else generation)
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers=headers, method="GET" if body is None else "POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_tools_over_http_with_the_same_authority(server: tuple[str, Harness]) -> None:
    url, mesh = server
    a = mesh.seat("a", revise=("team",))
    b = mesh.seat("b")
    status, listed = http(f"{url}/v1/tools", a)
    assert status == 200 and "memory.write" in [t["name"] for t in listed["tools"]]
    args = {"store": "team", "path": "x.md", "text": "hi", "expected_revision": 0}
    assert http(f"{url}/v1/tools/memory.write", a, args)[0] == 200
    status, body = http(f"{url}/v1/tools/memory.write", a, args)
    assert (status, body["error"]["current_revision"]) == (409, 1)
    assert http(f"{url}/v1/tools/memory.read", b, {"store": "team", "path": "x.md"})[0] == 404
    status, body = http(f"{url}/v1/tools/memory.write", a, {**args, "txt": 1})
    assert status == 400 and "'txt'" in body["error"]["message"]
    assert http(f"{url}/v1/tools", None)[0] == 401
    assert (
        http(f"{url}/v1/tools/self", a, {}, generation=a.generation - 1)[1]["error"]["code"]
        == "fenced"
    )


def test_only_loopback() -> None:
    assert check_loopback("127.0.0.1") == "127.0.0.1"
    assert check_loopback("::1") == "::1"
    with pytest.raises(UsageError):
        check_loopback("0.0.0.0")
