"""The ax-check command line: parse, call the core, print."""

from __future__ import annotations

from libcommon.cliapp import Environment, entry_point, make_app, run_main

app = make_app(
    "ax-check",
    "Typed verification: build/test/lint commands resolved from the project's own manifests.",
)


def main(argv: list[str] | None = None, env: Environment | None = None) -> int:
    return run_main(app, argv, env)


def run() -> None:
    entry_point(main)
