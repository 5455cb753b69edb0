"""libcommon.pyproject_env: the one rule ax-check and ax-preview share for "is this Python
project installed here, and what installs it"."""

from __future__ import annotations

from pathlib import Path

from libcommon.pyproject_env import (
    includes_system_site,
    install_cure,
    installed_distributions,
    parse_setup_cfg,
    read_project,
    site_dirs_of_venv,
)


def test_what_a_project_declares_for_running_and_for_tests(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("Gunicorn==22\n-e .\nuvloop; os_name == 'posix'\n")
    (tmp_path / "requirements-dev.txt").write_text("pytest\n")
    pyproject = {
        "project": {
            "name": "My_App",
            "dependencies": ["Flask>=3", "my-app[extra]", "tomli; python_version < '3.11'"],
            "optional-dependencies": {"test": ["pytest"]},
        }
    }
    project = read_project(tmp_path, tmp_path, pyproject, None)
    assert (project.name, project.manager) == ("my-app", None)
    assert project.dependencies == ("flask", "my-app")
    assert [group.name for group in project.runtime_groups] == ["requirements.txt"]
    # What the server needs: its dependencies and requirements.txt, never itself.
    assert project.needs(project.runtime_groups) == ("flask", "gunicorn")
    assert project.declares("pytest") and not project.declares("uvloop")
    dynamic = {"project": {"name": "x", "dynamic": ["dependencies"]}}
    assert read_project(tmp_path, tmp_path, dynamic, None).dependencies is None
    cfg = parse_setup_cfg("[metadata]\nname = From_Cfg\n")
    assert read_project(tmp_path / "none", tmp_path, {}, cfg).name == "from-cfg"


def test_an_environment_is_what_its_site_packages_lists(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    for entry in ("Flask-3.0.dist-info", "old_thing-1.egg-info", "dev_pkg.egg-link", "flask"):
        (site / entry).mkdir()
    assert site_dirs_of_venv(venv) == [site]
    assert installed_distributions([site]) == {"flask", "old-thing", "dev-pkg"}
    assert includes_system_site(venv) is False
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = true\n")
    assert includes_system_site(venv) is True


def test_the_cure_installs_where_the_project_will_run(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("flask\n")
    project = read_project(tmp_path, tmp_path, {"project": {"name": "app"}}, None)
    groups = project.runtime_groups
    # No environment: create the .venv the tools then find.
    assert install_cure(project, None, groups=groups) == (
        "python3 -m venv .venv && .venv/bin/pip install -e . -r requirements.txt"
    )
    assert install_cure(project, "../.venv", owned=True) == "../.venv/bin/pip install -e ."
    # A task that runs `venv/bin/...`: that venv, created unless it is the project's own.
    assert install_cure(project, ".venv", owned=True, create="venv") == (
        "python3 -m venv venv && venv/bin/pip install -e ."
    )
    assert install_cure(project, "venv", owned=True, create="venv") == "venv/bin/pip install -e ."
    assert install_cure(project, "/elsewhere/venv", create="venv").startswith("python3 -m venv")
    (tmp_path / "poetry.lock").write_text("")
    poetry = read_project(tmp_path, tmp_path, {"project": {"name": "app"}}, None)
    assert install_cure(poetry, None, groups=groups) == (
        "poetry install && poetry run pip install -r requirements.txt"
    )
