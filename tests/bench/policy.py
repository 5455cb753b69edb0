"""ax-policy figures, measured side by side in one run (not collected by pytest).

    .venv/bin/python tests/bench/policy.py

1. Cold start: `ax-policy review-command` against `python -c "import typer, pydantic, orjson"`
   (DESIGN.md budget: within 1.5x).
2. decide() per call for a read, a write and a read-only command (budget: well under 2 ms).
3. The everyday corpus share proven read-only on this machine.
4. The Codex-derived shares (tests/policy/corpus_codex.txt, corpus_codex_wide.txt): of the
   safe-command cases of Codex's current tests, of every command its tests assert safe or
   parse as plain (goal: 85% each), of what its parse_command classifies as a read, search
   or listing (read-only intent, goal 70%), among those whose programs are installed here;
   and how many of Codex's unsafe cases ax proves (goal: none).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ax_policy import (
    CommandFact,
    DecisionContext,
    SandboxStatus,
    ToolFacts,
    decide,
    review_command,
)

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "ax-policy"
RUNS = 15
CALLS = 2000


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def cold_starts(commands: dict[str, list[str]], env: dict[str, str]) -> dict[str, list[float]]:
    """Each command RUNS times, interleaved so machine load hits them alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, argv in commands.items():
            times[name].append(timed(argv, env))
    return times


def per_call_us(tool: ToolFacts, arg: dict[str, str], ctx: DecisionContext) -> float:
    for _ in range(50):
        decide(tool, arg, ctx)
    start = time.perf_counter()
    for _ in range(CALLS):
        decide(tool, arg, ctx)
    return (time.perf_counter() - start) / CALLS * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(os.path.realpath(tmp)) / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "src" / "app.py").write_text("x = 1  # TODO\n")
        (ws / "README.md").write_text("readme\n")
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "AX_STATE_DIR": str(Path(tmp) / "state"),
            "HOME": tmp,
        }

        times = cold_starts(
            {
                "python -c 'import typer, pydantic, orjson'": [
                    sys.executable,
                    "-c",
                    "import typer, pydantic, orjson",
                ],
                "ax-policy review-command": [
                    str(SCRIPT),
                    "review-command",
                    "-C",
                    str(ws),
                    "--",
                    "grep",
                    "-rn",
                    "TODO",
                    "src",
                ],
                "ax-policy --help": [str(SCRIPT), "--help"],
            },
            env,
        )
        base_min = min(times["python -c 'import typer, pydantic, orjson'"])
        base_median = statistics.median(times["python -c 'import typer, pydantic, orjson'"])
        print(f"cold start ({RUNS} interleaved runs; min / median; ratio to the baseline):")
        for name, values in times.items():
            low, mid = min(values), statistics.median(values)
            print(
                f"  {name:44s} {low * 1000:6.1f} / {mid * 1000:6.1f} ms"
                f"   {low / base_min:.2f}x / {mid / base_median:.2f}x"
            )
        print("  (budget: review-command within 1.5x)")

        sandbox = SandboxStatus(
            backend="landlock", enforced=True, profiles=["read-only"], network_denied=True
        )
        ctx = DecisionContext(workspace=ws, sandbox=sandbox, path_env=env["PATH"], home=Path(tmp))
        read = ToolFacts("read_file", reads=lambda i: [i["path"]])
        write = ToolFacts("write_file", writes=lambda i: [i["path"]])
        run = ToolFacts("run_command", command=lambda i: CommandFact(command=i["command"]))
        print(f"decide() per call (mean of {CALLS}):")
        for label, tool, arg in [
            ("read src/app.py", read, {"path": "src/app.py"}),
            ("write src/new.py", write, {"path": "src/new.py"}),
            ("command grep -rn TODO src", run, {"command": "grep -rn TODO src"}),
            ("command with a pipe (asks)", run, {"command": "cat README.md | sh"}),
            ("command grep -rn TODO src | wc -l", run, {"command": "grep -rn TODO src | wc -l"}),
            ("command bash -lc 'ls src && pwd'", run, {"command": "bash -lc 'ls src && pwd'"}),
            ("command cat src/*.py (a glob)", run, {"command": "cat src/*.py"}),
            ("command cd src && cat app.py", run, {"command": "cd src && cat app.py"}),
        ]:
            print(f"  {label:36s} {per_call_us(tool, arg, ctx):8.1f} us")

        for name in ("a.txt", "b.txt", "names.txt", "log.txt", "data.csv", "file.txt"):
            (ws / name).write_text("a\nb\n")
        (ws / "src" / "util.py").write_text("")
        (ws / "package.json").write_text('{"name": "demo"}\n')
        (ws / "Cargo.toml").write_text('[package]\nname = "demo"\n')
        lines = corpus_lines("corpus_readonly.txt")
        proven = sum(
            review_command(line, ws, path_env=env["PATH"]).verdict == "read-only" for line in lines
        )
        print(
            f"everyday corpus: {proven}/{len(lines)} proven read-only ({proven / len(lines):.0%})"
        )
        codex_share(env["PATH"])


def corpus_lines(name: str) -> list[str]:
    corpus = ROOT / "tests" / "policy" / name
    return [line for line in corpus.read_text().splitlines() if line and not line.startswith("##")]


def codex_share(path_env: str) -> None:
    """Codex's cases as tests/policy/test_codex_corpus.py measures them, in a workspace
    holding every file and folder they name."""
    sys.path.insert(0, str(ROOT / "tests" / "policy"))
    import test_codex_corpus as codex

    with tempfile.TemporaryDirectory() as tmp:
        ws = codex.make_codex_workspace(Path(tmp) / "codex")
        safe_claims = [row for row in codex.WIDE if row.get("claim", "asserted") != "classified"]
        intent = [row for row in codex.WIDE if row.get("claim") == "classified"]
        for label, rows, goal in [
            ("Codex current safe cases", codex.CURRENT, codex.CODEX_SAFE_SHARE),
            ("Codex wider safe cases (asserted, parsed)", safe_claims, codex.CODEX_SAFE_SHARE),
            ("Codex read-only intent (classified)", intent, codex.CODEX_INTENT_SHARE),
            ("Codex wider set, all claims", codex.WIDE, None),
        ]:
            share = codex.measure(rows, ws, path_env)
            wanted = f"; goal {goal:.0%}" if goal is not None else ""
            print(f"{share.line(label)}{wanted}")
        unsafe = [row for row in codex.WIDE if row["expect"] == "unsafe"]
        proven = sum(
            any(
                review_command(form, ws, path_env=path_env).verdict == "read-only"
                for form in codex.forms(row)
            )
            for row in unsafe
        )
        print(f"Codex unsafe cases proven: {proven}/{len(unsafe)} (goal: none)")


if __name__ == "__main__":
    main()
