"""Cold start of each tool beside ``python -c "import typer, pydantic, orjson"``.

Each tool's ``--help``, plus the small verbs the budget names (``ax-policy
review-command`` and ``ax-log events``), run in a scratch workspace.

Budget (DESIGN.md): each tool within 1.5x of that baseline on the same machine.
Runs are interleaved (baseline, tool, baseline, tool, …) so drift in machine load
hits both sides alike. Prints a table; exits 1 when a tool is over budget.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = ["policy", "exec", "log", "slate", "check", "preview", "report", "mcp", "agent"]
RUNS = 15
BUDGET_RATIO = 1.5
BASELINE = [sys.executable, "-c", "import typer, pydantic, orjson"]


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def script(tool: str) -> str:
    beside = Path(sys.executable).parent / f"ax-{tool}"
    found = str(beside) if beside.exists() else shutil.which(f"ax-{tool}")
    if found is None:
        sys.exit(f"ax-{tool} is not installed next to {sys.executable}")
    return found


def commands(workspace: Path) -> list[tuple[str, list[str]]]:
    rows = [(f"ax-{tool} --help", [script(tool), "--help"]) for tool in TOOLS]
    rows.append(
        (
            "ax-policy review-command",
            [script("policy"), "review-command", "-C", str(workspace), "--", "ls", "-la"],
        )
    )
    rows.append(
        ("ax-log events", [script("log"), "events", "-C", str(workspace), "--session", "bench"])
    )
    return rows


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        workspace = Path(scratch) / "ws"
        workspace.mkdir()
        os.environ["AX_STATE_DIR"] = str(Path(scratch) / "state")
        seed = subprocess.run(
            [script("log"), "append", "-C", str(workspace), "--session", "bench"],
            input='{"type": "custom", "kind": "bench", "data": {}}',
            text=True,
            capture_output=True,
        )
        if seed.returncode != 0:
            sys.exit(f"could not seed the bench session: {seed.stderr}")
        return measure(commands(workspace))


def measure(rows: list[tuple[str, list[str]]]) -> int:
    for argv in (BASELINE, rows[0][1]):
        timed(argv)  # warm the page cache once
    print(f"cold start, median of {RUNS} runs (interleaved with the baseline)")
    print(f"{'command':<28}{'median ms':>10}{'baseline ms':>13}{'ratio':>7}")
    over = []
    for label, argv in rows:
        base, mine = [], []
        for _ in range(RUNS):
            base.append(timed(BASELINE))
            mine.append(timed(argv))
        b, m = statistics.median(base), statistics.median(mine)
        ratio = m / b
        if ratio > BUDGET_RATIO:
            over.append(label)
        print(f"{label:<28}{m * 1000:>10.1f}{b * 1000:>13.1f}{ratio:>7.2f}")
    print(f"budget: ratio <= {BUDGET_RATIO}; over budget: {', '.join(over) or 'none'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
