"""Run every benchmark in tests/bench (or the ones named) and report each one's status."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> int:
    scripts = sorted(p for p in HERE.glob("*.py") if p.name != "run.py")
    if names:
        scripts = [p for p in scripts if p.stem in names]
    failed = []
    for path in scripts:
        print(f"== {path.stem}", flush=True)
        if subprocess.run([sys.executable, str(path)]).returncode != 0:
            failed.append(path.stem)
        print(flush=True)
    print(f"benchmarks over budget or failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
