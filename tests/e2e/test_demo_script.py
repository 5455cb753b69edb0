"""The pipeline demo (scripts/demo.sh) runs end to end with the installed tools."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from axtest import tool_path

ROOT = Path(__file__).resolve().parents[2]


def test_pipeline_demo_checks_the_fixed_file() -> None:
    bin_dir = str(Path(tool_path("log")).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run(
        ["bash", str(ROOT / "scripts" / "demo.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "- `calc.py`: modified, 1 change. **CHECKED**: check ran, exit 0" in proc.stdout
    assert "+    return a + b" in proc.stdout
    assert "\x1b[" not in proc.stdout + proc.stderr
