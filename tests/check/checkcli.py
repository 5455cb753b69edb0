"""Running ax-check's CLI in-process with --json, and writing a fixture project's files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from axtest import CliRunner

from ax_check.cli import main


def check(run_cli: CliRunner, *argv: str) -> tuple[int, dict[str, Any], str]:
    result = run_cli(main, [*argv, "--json"])
    return result.exit_code, json.loads(result.stdout), result.stderr


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
