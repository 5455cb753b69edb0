"""Is a Python project's server installed where it will run: libcommon.pyproject_env's rule.

A script runs the project's Python when its command (the Procfile entry, or the
recipe's own lines in a justfile or Makefile) names ``python``, ``python3`` or
``pythonX.Y``, or a program named like a distribution the project declares
(``gunicorn``, ``uvicorn``, ``flask``). What such a server needs is what the
project declares for running: ``[project] dependencies`` (or poetry's) and
``requirements.txt``. It runs in the project's virtualenv when it has one
(ax-preview puts its ``bin`` first on the server's PATH), else with the
``python3`` on PATH.

Nothing is refused that cannot be proven missing, as ax-check does:

- a command that picks or builds its own environment (``uv run``, ``poetry
  run``, ``uvx``, a container) or installs first (``pip install``, ``uv
  sync``), and a recipe with prerequisites (they may install), are not checked;
- dependencies declared ``dynamic`` (with no requirements.txt), a project that
  declares none, and one whose pyproject.toml or setup.cfg cannot be parsed;
- a virtualenv that also sees its base interpreter's site-packages, and an
  interpreter on PATH that cannot say where its packages are.

A virtualenv is listed by stat alone; an interpreter on PATH that is not one
(a system Python, a pyenv shim) is asked once for its ``sys.path``.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libcommon.pyproject_env import (
    includes_system_site,
    install_cure,
    installed_distributions,
    normalize,
    parse_setup_cfg,
    read_project,
    read_small,
    shown_list,
    site_dirs_of_venv,
)

PYTHON_PROBE_TIMEOUT_S = 10.0
# Words after which the environment is not the one ax-preview would check.
ENVIRONMENT_CHOOSERS = re.compile(
    r"(?<![\w./-])(?:(?:uv|poetry|pdm|hatch|pipenv|rye|pipx|conda)\s+run|uvx|docker|podman)"
    r"(?![\w.-])"
)
# Installs run before the server: what is missing now may not be by then.
INSTALLERS = re.compile(
    r"(?<![\w.-])(?:pip3?\s+install|uv\s+sync|uv\s+pip\s+(?:install|sync)|"
    r"(?:poetry|pdm|pipenv)\s+install|pip-sync)(?![\w.-])"
)
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_WORD = re.compile(r"[^\s;&|()<>'\"`=]+")
_SYS_PATH = "import json, sys; print(json.dumps(sys.path))"


@dataclass(frozen=True)
class Uninstalled:
    problem: str
    cure: str


def recipe_lines(text: str, name: str) -> str | None:
    """The lines justfile recipe or Makefile target ``name`` runs; None when it has
    prerequisites (another recipe runs first, and may install what this one needs)."""
    header = re.compile(rf"^@?{re.escape(name)}(?:\s[^:\n]*)?:(?!=)(.*)$")
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = header.match(line)
        if match is None:
            continue
        after = match.group(1).split("#", 1)[0].strip()
        if after and not after.startswith(";"):
            return None
        body = [after.lstrip(";")]
        for following in lines[index + 1 :]:
            if following.strip() and not following[0].isspace():
                break
            if not following.lstrip().startswith("#"):
                body.append(following)
        return "\n".join(body)
    return ""


def runs_python(command: str, declared: set[str]) -> bool:
    """The command runs python, or a program named like a distribution the project declares,
    in the environment ax-preview gives it (no manager picks another, nothing installs first)."""
    if ENVIRONMENT_CHOOSERS.search(command) or INSTALLERS.search(command):
        return False
    for word in _WORD.findall(command):
        program = word.rsplit("/", 1)[-1]
        if program.startswith("-"):
            continue
        if _PYTHON.fullmatch(program) or normalize(program) in declared:
            return True
    return False


def _manifests(project: Path) -> tuple[dict[str, Any], configparser.ConfigParser | None] | None:
    """The unit's pyproject.toml and setup.cfg, parsed; None when either cannot be."""
    pyproject: dict[str, Any] = {}
    setup_cfg = None
    text = read_small(project / "pyproject.toml")
    cfg_text = read_small(project / "setup.cfg")
    try:
        if text is not None:
            pyproject = tomllib.loads(text)
        if cfg_text is not None:
            setup_cfg = parse_setup_cfg(cfg_text)
    except (tomllib.TOMLDecodeError, configparser.Error):
        return None
    return pyproject, setup_cfg


def _sys_path(python: str, cwd: Path, environ: Mapping[str, str]) -> list[Path] | None:
    """Where the interpreter ``python`` finds packages, by asking it; None when it cannot say."""
    try:
        done = subprocess.run(
            [python, "-c", _SYS_PATH],
            cwd=cwd,
            env=dict(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=PYTHON_PROBE_TIMEOUT_S,
            check=False,
        )
        entries = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    if not isinstance(entries, list):
        return None
    return [cwd / entry for entry in entries if isinstance(entry, str) and entry]


def _interpreter_on_path(
    project: Path, environ: Mapping[str, str]
) -> tuple[str, list[Path] | None]:
    """The python3 the server finds on PATH, and its package folders (None: unknown)."""
    search = environ.get("PATH", os.defpath)
    found = shutil.which("python3", path=search) or shutil.which("python", path=search)
    if found is None:
        return "python3", None
    home = Path(found).parent.parent
    if (home / "pyvenv.cfg").is_file():
        return found, None if includes_system_site(home) else site_dirs_of_venv(home)
    return found, _sys_path(found, project, environ)


def server_uninstalled(
    project: Path,
    workspace: Path,
    venv: Path | None,
    command: str,
    environ: Mapping[str, str] | None = None,
) -> Uninstalled | None:
    """Why a server running ``command`` in ``project`` cannot start yet, with the cure;
    None when it can, or when that cannot be proven."""
    env = os.environ if environ is None else environ
    manifests = _manifests(project)
    if manifests is None:
        return None
    declared = read_project(project, workspace, *manifests)
    groups = declared.runtime_groups
    needed = declared.needs(groups)
    if not needed or not runs_python(command, set(needed)):
        return None
    extra = [project / entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    if venv is not None:
        shown = os.path.relpath(venv, project)
        site = None if includes_system_site(venv) else site_dirs_of_venv(venv)
        where = f"in its virtualenv {shown}"
        cure = install_cure(declared, shown, owned=True, groups=groups)
    else:
        python, site = _interpreter_on_path(project, env)
        where = f"for {python} (on PATH), and it has no .venv or venv"
        cure = install_cure(declared, None, groups=groups)
    if site is None:
        return None
    installed = installed_distributions([*site, *extra])
    missing = [name for name in needed if name not in installed]
    if not missing:
        return None
    names = shown_list(missing)
    return Uninstalled(
        f"the project's declared dependencies ({names}) are not installed {where}", cure
    )
