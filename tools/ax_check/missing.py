"""The cure for a program a project's command could not find (libcommon.missing finds it).

The scanner says which programs a run could not find and whether they account
for its exit status; this says what installs them for this unit: the unit's
package manager for a declared node program or a ``node_modules/.bin`` path,
the project's installer for a Python program or a missing virtualenv, a
rustup component or a ``cargo-x`` package, else "install it".
"""

from __future__ import annotations

from dataclasses import dataclass

from ax_check.facts import UnitFacts
from ax_check.installation import install_cure
from ax_check.models import Reason
from libcommon.missing import Missing, MissingScanner

# A node program whose package has another name.
NODE_BIN_PACKAGES: dict[str, str] = {"tsc": "typescript", "tsserver": "typescript"}


def _node_declares(facts: UnitFacts, program: str) -> bool:
    package = facts.package_json or {}
    wanted = NODE_BIN_PACKAGES.get(program, program)
    return any(
        isinstance(package.get(key), dict) and wanted in package[key]
        for key in ("dependencies", "devDependencies", "optionalDependencies")
    )


def _cure(item: Missing, facts: UnitFacts) -> tuple[Reason, str]:
    if item.cure is not None:
        return "toolchain-unavailable", item.cure
    node = facts.node
    if node is not None and (
        item.env_folder == "node_modules/.bin" or _node_declares(facts, item.program)
    ):
        return "precondition-curable", node.install_cure
    python, project = facts.python, facts.project
    if python is not None and project is not None:
        if item.env_folder is not None and item.env_folder != "node_modules/.bin":
            # The command runs a program from a venv that does not exist (or lacks it).
            return "precondition-curable", install_cure(
                project, python, project.test_groups, (item.program,), create=item.env_folder
            )
        if item.via == "python" or project.declares(item.program):
            group = project.group_naming(item.program)
            groups = (group,) if group is not None else ()
            extra = () if project.declares(item.program) else (item.program,)
            return "precondition-curable", install_cure(project, python, groups, extra)
    return "toolchain-unavailable", f"install {item.program} so that it is on PATH"


@dataclass(frozen=True)
class MissingTools:
    reason: Reason
    message: str
    cure: str


def classify(
    scanner: MissingScanner, exit_code: int, facts: UnitFacts, command: str
) -> MissingTools | None:
    """Why the command could not run, when a missing program accounts for its exit status."""
    missing = scanner.explained(exit_code)
    if not missing:
        return None
    cures = [_cure(item, facts) for item in missing]
    reason: Reason = (
        "precondition-curable"
        if all(reason == "precondition-curable" for reason, _ in cures)
        else "toolchain-unavailable"
    )
    names = ", ".join(dict.fromkeys(item.program for item in missing))
    message = (
        f"`{command}` could not find {names} (exit {exit_code}): the project's command needs "
        "a program that is not installed where it ran, so nothing was checked"
    )
    return MissingTools(reason, message, "; ".join(dict.fromkeys(cure for _, cure in cures)))
