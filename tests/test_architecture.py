"""DESIGN.md's dependency rules, checked by reading every import in the tree.

The checker is a plain function over a source tree, so the tests below run it
both on the real tree (which must be clean) and on small planted trees (each of
which must be caught) — a checker that finds nothing would fail the latter.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Which tools each tool may import (DESIGN.md, "Dependency direction").
ALLOWED_TOOL_DEPS: dict[str, set[str]] = {
    "ax_log": set(),
    "ax_policy": set(),
    "ax_exec": set(),
    "ax_map": set(),
    "ax_check": {"ax_exec", "ax_log"},
    "ax_preview": {"ax_exec", "ax_log"},
    "ax_report": {"ax_log"},
    "ax_slate": {"ax_log"},
    "ax_mesh": {"ax_log"},
    "ax_mcp": {"ax_slate", "ax_check", "ax_policy", "ax_log", "ax_report", "ax_map", "ax_mesh"},
    "ax_agent": {
        "ax_log",
        "ax_policy",
        "ax_exec",
        "ax_check",
        "ax_preview",
        "ax_report",
        "ax_slate",
        "ax_mcp",
        "ax_map",
        "ax_mesh",
    },
}
HEAVY = {"anthropic", "httpx", "rich", "mcp", "httpx2", "docx", "pypdf", "pypdfium2", "playwright"}
# anthropic may be imported only by ax_agent's provider modules, and lazily.
ANTHROPIC_HOMES = ("ax_agent.provider", "ax_agent.providers")
# Capability packs (issue 25): pure modules with no kernel imports. Each may import
# itself, libcommon and the standard library or third-party packages, nothing else of ax.
PURE_PACKS = ("ax_agent.research",)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module or package, dotted and absolute
    names: tuple[str, ...]  # for `from X import a, b`
    line: int
    top_level: bool  # executed at import time (not inside a function)


def module_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) for libcommon and every tools/ax_* package."""
    packages = [root / "libcommon", *sorted((root / "tools").glob("ax_*"))]
    for package in packages:
        if not package.is_dir():
            continue
        for file in sorted(package.rglob("*.py")):
            parts = list(file.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), file


def read_imports(module: str, file: Path) -> list[Import]:
    tree = ast.parse(file.read_text(), filename=str(file))
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, top_level: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                # Imports under `if TYPE_CHECKING:` never run.
                for item in child.orelse:
                    visit(item, top_level)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(module, alias.name, (), child.lineno, top_level))
            elif isinstance(child, ast.ImportFrom):
                target = _absolute(child, package)
                names = tuple(alias.name for alias in child.names)
                found.append(Import(module, target, names, child.lineno, top_level))
            nested = top_level and not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            visit(child, nested)

    visit(tree, True)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    base = package.split(".")
    if node.level > 1:
        base = base[: -(node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def top(name: str) -> str:
    return name.split(".")[0]


def public_names(init: Path) -> set[str]:
    """The names a package's ``__all__`` lists (a literal list or tuple of strings)."""
    for node in ast.parse(init.read_text()).body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, ast.List | ast.Tuple)
        ):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def check_tree(root: Path) -> list[str]:
    """Every violation of the dependency rules in the tree at ``root``."""
    files = dict(module_files(root))
    known = set(files)
    exported = {
        module: public_names(file) for module, file in files.items() if file.name == "__init__.py"
    }
    problems: list[str] = []
    graph: dict[str, set[str]] = {name: set() for name in known}

    for module, file in files.items():
        owner = top(module)
        for imp in read_imports(module, file):
            where = f"{file.relative_to(root)}:{imp.line}"
            targets = [imp.target]
            # `from pkg import sub` imports the submodule pkg.sub when there is one.
            targets += [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in known]
            for target in targets:
                if target in known and target != module:
                    graph[module].add(target)
            dest = top(imp.target)
            if any(t in known and t.rpartition(".")[2] == "cli" for t in targets):
                problems.append(f"{where}: imports a cli module ({imp.target})")
            if dest in HEAVY:
                if imp.top_level:
                    problems.append(f"{where}: imports {dest} at module level (make it lazy)")
                if dest == "anthropic" and not module.startswith(ANTHROPIC_HOMES):
                    problems.append(f"{where}: anthropic belongs only in ax_agent's provider")
            if owner == "libcommon" and dest.startswith("ax_"):
                problems.append(f"{where}: libcommon imports the tool {dest}")
            pack = next((p for p in PURE_PACKS if module == p or module.startswith(p + ".")), None)
            if pack is not None and (
                dest.startswith("ax_")
                and not (imp.target == pack or imp.target.startswith(pack + "."))
            ):
                problems.append(f"{where}: the pure pack {pack} imports {imp.target}")
            if owner.startswith("ax_") and dest.startswith("ax_"):
                if dest == owner:
                    # `from . import sibling` is fine; a name defined in __init__ is not.
                    if imp.target == owner and module != owner and len(targets) <= len(imp.names):
                        problems.append(
                            f"{where}: imports its own package root; import the module instead"
                        )
                    continue
                if dest not in ALLOWED_TOOL_DEPS.get(owner, set()):
                    problems.append(f"{where}: {owner} may not import {dest}")
                if imp.target != dest or len(targets) > 1:
                    problems.append(
                        f"{where}: imports {imp.target}"
                        f"{'.' + ','.join(imp.names) if imp.names else ''} "
                        f"— use the package root {dest} and its public names"
                    )

    for package, names in exported.items():
        problems += [
            f"{package}: public name {name!r} is also a submodule; importing the submodule "
            "replaces the name on the package"
            for name in sorted(names)
            if f"{package}.{name}" in known
        ]
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in find_cycles(graph)]
    return problems


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One representative cycle per strongly connected component (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0

    def strongconnect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                strongconnect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return cycles


def test_the_tree_follows_the_dependency_rules() -> None:
    problems = check_tree(ROOT)
    assert problems == [], "\n".join(problems)


def test_every_tool_package_is_known_to_the_rules() -> None:
    packages = {p.name for p in (ROOT / "tools").glob("ax_*") if p.is_dir()}
    assert packages == set(ALLOWED_TOOL_DEPS)


def _plant(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {
        "libcommon/__init__.py": "",
        "tools/ax_log/__init__.py": "",
        "tools/ax_exec/__init__.py": "",
        "tools/ax_check/__init__.py": "",
        **files,
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"libcommon/paths.py": "import ax_log\n"}, "libcommon imports the tool ax_log"),
        ({"tools/ax_log/core.py": "from ax_exec import run\n"}, "ax_log may not import ax_exec"),
        (
            {
                "tools/ax_check/run.py": "from ax_exec.spawn import run\n",
                "tools/ax_exec/spawn.py": "",
            },
            "use the package root ax_exec",
        ),
        (
            {"tools/ax_check/run.py": "from ax_exec import spawn\n", "tools/ax_exec/spawn.py": ""},
            "use the package root ax_exec",
        ),
        (
            {"tools/ax_log/x.py": "from ax_log import cli\n", "tools/ax_log/cli.py": ""},
            "imports a cli module",
        ),
        (
            {"tools/ax_log/x.py": "from . import cli\n", "tools/ax_log/cli.py": ""},
            "imports a cli module",
        ),
        (
            {"tools/ax_log/a.py": "from . import b\n", "tools/ax_log/b.py": "from .a import f\n"},
            "import cycle: ax_log.a -> ax_log.b",
        ),
        ({"tools/ax_check/run.py": "import httpx\n"}, "imports httpx at module level"),
        (
            {"tools/ax_check/run.py": "def f():\n    import anthropic\n"},
            "anthropic belongs only in ax_agent's provider",
        ),
        (
            {
                "tools/ax_agent/__init__.py": "",
                "tools/ax_agent/session.py": "",
                "tools/ax_agent/research/__init__.py": "",
                "tools/ax_agent/research/budget.py": "from ..session import Session\n",
            },
            "the pure pack ax_agent.research imports ax_agent.session",
        ),
        (
            {
                "tools/ax_agent/__init__.py": "",
                "tools/ax_agent/research/__init__.py": "",
                "tools/ax_agent/research/urls.py": "def f():\n    from ax_log import x\n",
            },
            "the pure pack ax_agent.research imports ax_log",
        ),
        ({"tools/ax_log/core.py": "from ax_log import thing\n"}, "imports its own package root"),
        (
            {
                "tools/ax_exec/__init__.py": "from .spawn import spawn\n__all__ = ['spawn']\n",
                "tools/ax_exec/spawn.py": "def spawn(): ...\n",
            },
            "public name 'spawn' is also a submodule",
        ),
        (
            {"tools/ax_log/core.py": "from . import events, thing\n", "tools/ax_log/events.py": ""},
            "imports its own package root",
        ),
    ],
)
def test_a_planted_violation_is_caught(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    problems = check_tree(_plant(tmp_path, files))
    assert any(expected in problem for problem in problems), problems


def test_lazy_and_type_checking_imports_are_allowed(tmp_path: Path) -> None:
    planted = {
        "tools/ax_check/run.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import rich\n"
            "from ax_exec import run\nfrom ax_log import append\n"
            "def f():\n    import httpx\n"
        ),
        "tools/ax_log/core.py": "from . import events\nfrom ax_log import events as e\n",
        "tools/ax_log/events.py": "",
    }
    assert check_tree(_plant(tmp_path, planted)) == []
