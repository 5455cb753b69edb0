"""ax-mcp's workspace_map and retrieve, driven by the official MCP SDK's stdio client.

The server is the installed ``ax-mcp`` as a real subprocess; the index is ax-map's, built
by the installed ``ax-map`` or by the server itself in a trusted workspace.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from axtest import tool_path
from mcp import ClientSession
from mcptest import call, run_session

from ax_mcp.catalog import MAP_REFRESH_BUDGET_S
from libcommon.paths import state_layout


def project(workspace: Path) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "core.py").write_text("def parse_args(argv):\n    return list(argv)\n")
    (workspace / "pkg" / "use.py").write_text(
        "from pkg.core import parse_args\n\n\ndef main():\n    return parse_args([])\n"
    )


def ax_map(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool_path("map"), *args], capture_output=True, text=True, timeout=120, check=False
    )


def trust(workspace: Path) -> None:
    from ax_policy import grant_trust

    grant_trust(state_layout(workspace))


def test_untrusted_without_an_index_names_both_cures(workspace: Path) -> None:
    project(workspace)

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await call(session, "workspace_map", {}),
            await call(session, "retrieve", {"query": "parse_args"}),
        ]

    for result in run_session(workspace, scenario):
        assert result.is_error is True
        text = result.content[0].text
        assert "is missing" in text and "not trusted" in text
        assert f"ax-map build -C {workspace}" in text
        assert f"ax-policy trust grant -C {workspace}" in text
    assert not state_layout(workspace).map_dir.exists()


def test_untrusted_uses_the_built_index_as_it_is_and_says_so(workspace: Path) -> None:
    project(workspace)
    assert ax_map("build", "-C", str(workspace)).returncode == 0
    (workspace / "pkg" / "late.py").write_text("def zeta_added_later():\n    pass\n")
    shown_by_cli = ax_map("show", "-C", str(workspace), "--query", "parse_args")

    async def scenario(session: ClientSession) -> list[Any]:
        return [
            await call(session, "workspace_map", {"query": "parse_args"}),
            await call(session, "retrieve", {"query": "parse_args", "limit": 1}),
            await call(session, "retrieve", {"query": "zeta_added_later"}),
        ]

    mapped, found, late = run_session(workspace, scenario)
    assert mapped.is_error is False
    shown = mapped.structured_content
    # The same index and request give the same text as ax-map show, cited by its sha256.
    assert shown["text"] == shown_by_cli.stdout
    assert shown["sha256"] == hashlib.sha256(shown["text"].encode()).hexdigest()
    assert (shown["state"], shown["coverage"]["indexed"]) == ("complete", 2)
    assert shown["refreshed"] is False
    assert "not trusted" in shown["indexNote"]
    assert found.is_error is False
    (hit,) = found.structured_content["hits"]
    assert hit["path"] == "pkg/core.py"
    assert hit["symbols"] == [{"name": "parse_args", "kind": "function", "line": 1}]
    assert hit["excerpt"][0] == "1: def parse_args(argv):"
    assert found.structured_content["refreshed"] is False
    # Not refreshed: the file written after the build is not in the answer.
    assert late.structured_content["hits"] == []


def test_trusted_builds_and_refreshes_the_index_first(workspace: Path) -> None:
    project(workspace)
    trust(workspace)

    async def scenario(session: ClientSession) -> list[Any]:
        first = await call(session, "workspace_map", {"focus": ["pkg"], "chars": 2000})
        (workspace / "pkg" / "late.py").write_text("def zeta_added_later():\n    pass\n")
        late = await call(session, "retrieve", {"query": "zeta_added_later"})
        return [first, late]

    first, late = run_session(workspace, scenario)
    assert first.is_error is False, first.content[0].text
    shown = first.structured_content
    assert shown["refreshed"] is True
    assert shown["indexNote"].startswith("refreshed just now: 2 files read")
    assert shown["focus"] == ["pkg"] and shown["focusUnmatched"] == []
    assert shown["chars"] <= 2000 and "pkg/core.py" in shown["text"]
    assert late.is_error is False
    assert late.structured_content["refreshed"] is True
    assert [hit["path"] for hit in late.structured_content["hits"]] == ["pkg/late.py"]


def test_a_running_build_costs_the_budget_at_most_and_the_old_index_answers(
    workspace: Path,
) -> None:
    project(workspace)
    assert ax_map("build", "-C", str(workspace)).returncode == 0
    trust(workspace)
    lock = state_layout(workspace).map_dir / "build.lock"
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:

        async def scenario(session: ClientSession) -> tuple[Any, float]:
            start = time.monotonic()
            result = await call(session, "workspace_map", {})
            return result, time.monotonic() - start

        result, took = run_session(workspace, scenario)
    finally:
        os.close(fd)
    assert result.is_error is False
    assert result.structured_content["refreshed"] is False
    assert (
        "not refreshed: could not take the map build lock"
        in (result.structured_content["indexNote"])
    )
    assert result.structured_content["coverage"]["indexed"] == 2
    assert MAP_REFRESH_BUDGET_S <= took < MAP_REFRESH_BUDGET_S + 3


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("workspace_map", {"chars": 10}, "out of range"),
        ("workspace_map", {"focus": ["../outside"]}, "outside the workspace"),
        ("workspace_map", {"query": "q" * 1001}, "1,001 characters"),
        ("workspace_map", {"focus": ["x"] * 65}, "65 focus paths"),
        ("workspace_map", {"chars": "many"}, "chars"),
        ("retrieve", {"query": ""}, "needs a query"),
        ("retrieve", {"query": "x", "limit": 0}, "limit 0"),
        ("retrieve", {"query": "x", "limit": 101}, "limit 101"),
        ("retrieve", {}, "query"),
    ],
)
def test_bad_arguments_are_tool_errors_and_build_nothing(
    workspace: Path, tool: str, arguments: dict[str, Any], named: str
) -> None:
    project(workspace)
    trust(workspace)

    async def scenario(session: ClientSession) -> Any:
        return await call(session, tool, arguments)

    result = run_session(workspace, scenario)
    assert result.is_error is True
    assert named in result.content[0].text
    assert not state_layout(workspace).map_dir.exists()
