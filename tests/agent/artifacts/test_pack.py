"""The documents pack is a pure module: it imports nothing of the harness."""

from __future__ import annotations

import ast
from pathlib import Path

PACK = Path(__file__).resolve().parents[3] / "tools" / "ax_agent" / "artifacts"
HARNESS = ("ax_", "libcommon")


def test_the_pack_imports_no_harness_module() -> None:
    found = []
    for file in sorted(PACK.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
                if node.level > 1:
                    found.append(f"{file.name}: from {'.' * node.level}{node.module}")
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            found += [f"{file.name}: {name}" for name in names if name.startswith(HARNESS)]
    assert found == []
