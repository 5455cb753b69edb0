"""Each tool's ``--help`` runs in a fresh interpreter without the heavy imports.

The installed console script runs with ``PYTHONPROFILEIMPORTTIME=1``, which makes
CPython list every module it imports on stderr; that list is the evidence.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from axtest import TOOLS, tool_path

from libcommon import jsonio

HEAVY = {"anthropic", "httpx", "rich"}
# Not forbidden by DESIGN.md, but --help has no use for it and it costs ~40 ms a start:
# a public face that imports its models eagerly shows up here first.
LEAN_HELP_AVOIDS = {"pydantic"}


def imported_modules(argv: list[str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    modules = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":  # the header row
                modules.add(name)
    return proc, modules


@pytest.mark.parametrize("tool", TOOLS)
def test_help_does_not_import_heavy_modules(tool: str) -> None:
    proc, modules = imported_modules([tool_path(tool), "--help"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"ax-{tool}" in proc.stdout
    # The import list was really read: typer must be in it.
    assert "typer" in modules
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY | LEAN_HELP_AVOIDS)
    assert heavy == [], f"ax-{tool} --help imported {heavy}"


@pytest.mark.parametrize("tool", TOOLS)
def test_version_from_the_installed_script(tool: str) -> None:
    from libcommon import __version__

    proc = subprocess.run([tool_path(tool), "--version"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stdout == f"ax-{tool} {__version__}\n"
    assert proc.stderr == ""


def test_review_command_without_configuration_does_not_import_pydantic(workspace: Path) -> None:
    # No user or workspace config file: the review runs on plain dataclasses and the
    # "no configuration" fast path, so the start does not pay for pydantic (~40 ms).
    proc, modules = imported_modules(
        [tool_path("policy"), "review-command", "-C", str(workspace), "--", "ls"]
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert jsonio.loads(proc.stdout)["verdict"] == "read-only"
    assert "ax_policy.command_review" in modules
    pydantic = sorted(m for m in modules if m.split(".")[0] in {"pydantic", "pydantic_core"})
    assert pydantic == [], f"ax-policy review-command imported {pydantic}"


# What ax-map's extraction and index load: none of it belongs in a --help.
MAP_EXTRACTION = {"tree_sitter", "sqlite3", "_sqlite3", "multiprocessing"}


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["build", "--help"],
        ["stats", "--help"],
        ["show", "--help"],
        ["retrieve", "--help"],
    ],
)
def test_map_help_loads_no_grammar_and_no_database(argv: list[str]) -> None:
    proc, modules = imported_modules([tool_path("map"), *argv])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "typer" in modules
    loaded = sorted(
        m for m in modules if m.split(".")[0] in MAP_EXTRACTION | {"tree_sitter_python"}
    )
    assert loaded == [], f"ax-map {' '.join(argv)} imported {loaded}"


def test_a_warm_map_build_with_nothing_to_parse_loads_no_grammar(workspace: Path) -> None:
    (workspace / "a.py").write_text("def a(): pass\n")
    past = 1_000_000_000
    os.utime(workspace / "a.py", (past, past))
    first = subprocess.run([tool_path("map"), "build", "-C", str(workspace)], capture_output=True)
    assert first.returncode == 0, first.stderr
    proc, modules = imported_modules([tool_path("map"), "build", "-C", str(workspace)])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert jsonio.loads(proc.stdout)["written"] is False
    assert "ax_map.build" in modules
    grammars = sorted(m for m in modules if m.startswith("tree_sitter"))
    assert grammars == [], f"a warm ax-map build imported {grammars}"
    # Nor what only a build that reads files needs, nor pydantic (its summary is the
    # BuildSummary contract's JSON, made by hand: tests/map pins them byte for byte).
    cold_only = sorted(
        m
        for m in modules
        if m.split(".")[0] in {"pydantic", "pydantic_core", "multiprocessing"}
        or m in {"ax_map.extract", "ax_map.scan", "ax_map.resolve", "ax_map.models"}
    )
    assert cold_only == [], f"a warm ax-map build imported {cold_only}"


def test_map_show_and_retrieve_load_no_grammar(workspace: Path) -> None:
    (workspace / "a.py").write_text("def alpha(): pass\n")
    built = subprocess.run([tool_path("map"), "build", "-C", str(workspace)], capture_output=True)
    assert built.returncode == 0, built.stderr
    for argv in (["show"], ["retrieve", "alpha"]):
        proc, modules = imported_modules([tool_path("map"), *argv, "-C", str(workspace)])
        assert proc.returncode == 0, proc.stderr[-2000:]
        grammars = sorted(
            m for m in modules if m.split(".")[0] in {"tree_sitter", "multiprocessing"}
        )
        assert grammars == [], f"ax-map {argv[0]} imported {grammars}"


def test_mcp_lists_its_tools_without_loading_the_map_index(workspace: Path) -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.run(
        [tool_path("mcp"), "-C", str(workspace)],
        input="".join(jsonio.dumps(m).decode() + "\n" for m in messages),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"workspace_map"' in proc.stdout
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    loaded = sorted(
        m for m in modules if m.split(".")[0] in MAP_EXTRACTION or m.startswith("ax_map.index")
    )
    assert loaded == [], f"ax-mcp imported {loaded} before any map tool was called"
