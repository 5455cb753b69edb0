"""Which command a script name means, read from the project's own manifests.

Nobody passes ax-preview a command line. A caller names one of a fixed set of
scripts, and the harness composes the command from what the project declares:
a package.json script (run through the package manager its lockfile names), a
justfile or Makefile recipe of that name, or a Procfile ``web:`` entry (which
answers to ``start``, Heroku's meaning of it). The first manifest that defines
the name wins, in that order.

Before anything starts, the project must be able to run it: the runner on
PATH, and the dependencies installed by the rule ax-check applies: for a
package.json script libcommon.projectenv's, for a script that runs the
project's Python libcommon.pyproject_env's (pythonenv.py says when a script
does, and which interpreter it runs). A project's virtualenv, when it has one,
is the environment its server runs in.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ax_preview.pythonenv import recipe_lines, server_uninstalled
from libcommon.errors import Unsupported, UsageError
from libcommon.projectenv import NODE_NOT_INSTALLED, find_venv, node_env

SCRIPT_NAMES = ("dev", "start", "serve", "preview")
MANIFEST_MAX_BYTES = 1024 * 1024
PROCFILE_SCRIPT = "start"

_JUST_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)(?:\s+[^:\n]*)?:(?!=)", re.MULTILINE)
_MAKE_TARGET = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)", re.MULTILINE)
_PROCFILE_WEB = re.compile(r"^web\s*:\s*(\S.*)$", re.MULTILINE)


@dataclass(frozen=True)
class ResolvedScript:
    name: str
    source: str  # "package.json", "justfile", "Makefile", "Procfile"
    argv: list[str]
    cwd: Path
    # The project's virtualenv: first on the server's PATH, and its VIRTUAL_ENV.
    environment: Path | None = None


def _read(path: Path) -> str | None:
    if not path.is_file():
        return None
    with path.open("rb") as handle:
        data = handle.read(MANIFEST_MAX_BYTES + 1)
    if len(data) > MANIFEST_MAX_BYTES:
        raise UsageError(f"{path} is larger than {MANIFEST_MAX_BYTES} bytes; not reading it")
    return data.decode("utf-8", "replace")


def _package_manifest(project: Path) -> dict[str, Any]:
    text = _read(project / "package.json")
    if text is None:
        return {}
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{project / 'package.json'} is not valid JSON: {exc}") from None
    return manifest if isinstance(manifest, dict) else {}


def _package_scripts(project: Path) -> dict[str, str]:
    scripts = _package_manifest(project).get("scripts")
    if not isinstance(scripts, dict):
        return {}
    return {name: body for name, body in scripts.items() if isinstance(body, str)}


def _justfile(project: Path) -> Path | None:
    for name in ("justfile", "Justfile", ".justfile"):
        if (project / name).is_file():
            return project / name
    return None


def _makefile(project: Path) -> Path | None:
    for name in ("GNUmakefile", "makefile", "Makefile"):
        if (project / name).is_file():
            return project / name
    return None


def available_scripts(project: Path) -> dict[str, str]:
    """Allowlisted script name -> the manifest that defines it (first one wins)."""
    found: dict[str, str] = {}
    package = _package_scripts(project)
    justfile = _justfile(project)
    just_recipes = set(_JUST_RECIPE.findall(_read(justfile) or "")) if justfile else set()
    makefile = _makefile(project)
    make_targets = set(_MAKE_TARGET.findall(_read(makefile) or "")) if makefile else set()
    procfile = _read(project / "Procfile")
    has_web = procfile is not None and _PROCFILE_WEB.search(procfile) is not None
    for name in SCRIPT_NAMES:
        if name in package:
            found[name] = "package.json"
        elif name in just_recipes and justfile is not None:
            found[name] = justfile.name
        elif name in make_targets and makefile is not None:
            found[name] = makefile.name
        elif name == PROCFILE_SCRIPT and has_web:
            found[name] = "Procfile"
    return found


def _runner(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise Unsupported(
            f"the script needs {program!r}, which is not on PATH",
            reason="runner-missing",
            hint=f"install {program} or run the server another way",
        )
    return path


def resolve_script(
    project: Path, name: str | None, workspace: Path | None = None
) -> ResolvedScript:
    """The command for script ``name`` (default: the first allowlisted one defined).

    ``workspace`` bounds the search for a lockfile, node_modules and a
    virtualenv above ``project`` (default: ``project`` itself). Raises
    ``NotInstalled`` when the project's dependencies must be installed first.
    """
    root = project if workspace is None else workspace
    if name is not None and name not in SCRIPT_NAMES:
        raise UsageError(
            f"script {name!r} is not one ax-preview runs",
            hint=f"use one of: {', '.join(SCRIPT_NAMES)}",
        )
    found = available_scripts(project)
    if name is None:
        if not found:
            raise NoSuchScript(None, found)
        name = next(iter(found))
    source = found.get(name)
    if source is None:
        raise NoSuchScript(name, found)
    # The text a Python server's command runs (None: not a Python server's, or unknown).
    runs: str | None = None
    if source == "package.json":
        node = node_env(project, root, _package_manifest(project))
        argv = [_runner(node.manager), "run", name]
        if node.manager != "bun":
            _runner("node")
        if node.needs_install:
            raise NotInstalled(NODE_NOT_INSTALLED, node.install_cure, project)
    elif source == "Procfile":
        procfile = _read(project / "Procfile") or ""
        match = _PROCFILE_WEB.search(procfile)
        assert match is not None  # available_scripts found it
        runs = match.group(1).strip()
        argv = ["/bin/sh", "-c", runs]
    else:
        runs = recipe_lines(_read(project / source) or "", name)
        if source.lower().endswith("justfile"):
            argv = [_runner("just"), "--justfile", str(project / source), name]
        else:
            argv = [_runner("make"), "-f", str(project / source), name]
    venv = find_venv(project, root)
    if runs is not None:
        uninstalled = server_uninstalled(project, root, venv, runs)
        if uninstalled is not None:
            raise NotInstalled(uninstalled.problem, uninstalled.cure, project)
    return ResolvedScript(name=name, source=source, argv=argv, cwd=project, environment=venv)


class NotInstalled(Unsupported):
    """The project cannot run yet: ``cure`` installs what it needs. Nothing was started."""

    def __init__(self, problem: str, cure: str, project: Path) -> None:
        super().__init__(
            f"{problem} in {project}",
            reason="precondition-curable",
            hint=f"{cure} in {project}, then start the preview again",
        )
        self.cure = cure


class NoSuchScript(Unsupported):
    """The project defines no such script; ``available`` lists the ones it does."""

    def __init__(self, name: str | None, available: dict[str, str]) -> None:
        what = f"no {name!r} script" if name else "no script ax-preview can run"
        listed = ", ".join(f"{script} ({source})" for script, source in available.items())
        super().__init__(
            f"this project defines {what}",
            reason="no-such-script",
            hint=f"scripts that exist: {listed}"
            if listed
            else "define one of: "
            + ", ".join(SCRIPT_NAMES)
            + " in package.json, a justfile, a Makefile, or a Procfile web: entry",
        )
        self.name = name
        self.available = available
