"""Unit discovery on real folder trees: what is a unit, what is a note, and the order."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ax_check.check import BadRequest, select_unit
from ax_check.facts import expand_env_names
from ax_check.units import MAX_UNITS, choose_unit, discover_units, load_jsonc, locate


def write(root: Path, relative: str, text: str = "") -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_root_manifest_is_the_only_unit(workspace: Path) -> None:
    write(workspace, "pyproject.toml", "[project]\nname='x'\n")
    write(workspace, "src/x/__init__.py")
    found = discover_units(workspace)
    assert found.ids == ["."]
    assert found.units[0].manifests == ("pyproject.toml",)
    assert found.units[0].ecosystems == ("python",)


def test_depth_one_and_containers_root_first_then_lexicographic(workspace: Path) -> None:
    write(workspace, "package.json", "{}")
    write(workspace, "zeta/Cargo.toml", "[package]\nname='z'\n")
    write(workspace, "alpha/go.mod", "module a\n")
    write(workspace, "packages/b/package.json", "{}")
    write(workspace, "packages/a/pyproject.toml", "")
    write(workspace, "services/api/setup.py", "")
    # Folders without a manifest are candidates, never units.
    write(workspace, "docs/readme.md", "")
    write(workspace, "packages/empty/readme.md", "")
    # Deeper than depth 1 outside a container is not looked at.
    write(workspace, "tools/deep/inner/package.json", "{}")
    found = discover_units(workspace)
    assert found.ids == [".", "alpha", "packages/a", "packages/b", "services/api", "zeta"]
    assert found.notes == ()


def test_hidden_and_installed_folders_are_not_units(workspace: Path) -> None:
    write(workspace, ".cache/package.json", "{}")
    write(workspace, "node_modules/package.json", "{}")
    write(workspace, "web/package.json", "{}")
    assert discover_units(workspace).ids == ["web"]


def test_npm_workspaces_literal_and_trailing_star(workspace: Path) -> None:
    write(
        workspace,
        "package.json",
        json.dumps({"workspaces": ["tools/*", "./lib/core/", "bad/**", "!skip", "../out"]}),
    )
    write(workspace, "tools/cli/package.json", "{}")
    write(workspace, "tools/gen/package.json", "{}")
    write(workspace, "lib/core/package.json", "{}")
    write(workspace, "bad/x/y/package.json", "{}")
    found = discover_units(workspace)
    assert found.ids == [".", "lib/core", "tools/cli", "tools/gen"]
    joined = "\n".join(found.notes)
    assert "'bad/**' is not interpreted" in joined
    assert "'!skip' is not interpreted" in joined
    assert "'../out' is not a folder inside the workspace" in joined


def test_yarn_style_workspaces_object_and_member_without_manifest(workspace: Path) -> None:
    write(workspace, "package.json", json.dumps({"workspaces": {"packages": ["app", "ghost"]}}))
    write(workspace, "app/package.json", "{}")
    write(workspace, "ghost/readme.md", "")
    found = discover_units(workspace)
    assert found.ids == [".", "app"]
    assert any("ghost: declared as a member but holds no manifest" in n for n in found.notes)


def test_cargo_members_go_work_and_pnpm(workspace: Path) -> None:
    write(workspace, "Cargo.toml", '[workspace]\nmembers = ["crates/*"]\n')
    write(workspace, "crates/one/Cargo.toml", "[package]\nname='one'\n")
    write(workspace, "go.work", "go 1.22\n\nuse (\n\t./cmd/tool // the cli\n)\nuse ./lib\n")
    write(workspace, "cmd/tool/go.mod", "module t\n")
    write(workspace, "lib/go.mod", "module l\n")
    write(workspace, "pnpm-workspace.yaml", "packages:\n  - 'ui/*'\n  - \"docs-site\"\n")
    write(workspace, "ui/kit/package.json", "{}")
    write(workspace, "docs-site/package.json", "{}")
    assert discover_units(workspace).ids == [
        ".",
        "cmd/tool",
        "crates/one",
        "docs-site",
        "lib",
        "ui/kit",
    ]


def test_unreadable_pnpm_list_is_a_note(workspace: Path) -> None:
    write(workspace, "pnpm-workspace.yaml", "packages: !!weird\n")
    found = discover_units(workspace)
    assert found.ids == ["."]
    assert found.units[0].manifests == ()
    assert any("pnpm-workspace.yaml" in note for note in found.notes)


def test_member_that_escapes_through_a_symlink_is_dropped(tmp_path: Path, workspace: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "package.json", "{}")
    os.symlink(outside, workspace / "linked")
    write(workspace, "real/package.json", "{}")
    found = discover_units(workspace)
    assert found.ids == ["real"]
    assert any("linked: resolves outside the workspace" in note for note in found.notes)


def test_no_manifest_resolves_to_the_root(workspace: Path) -> None:
    found = discover_units(workspace)
    assert found.ids == ["."]
    assert found.units[0].manifests == ()


def test_unit_count_is_capped_with_a_note(workspace: Path) -> None:
    for index in range(MAX_UNITS + 3):
        write(workspace, f"packages/p{index:04d}/package.json", "{}")
    found = discover_units(workspace)
    assert len(found.units) == MAX_UNITS
    assert any(f"only the first {MAX_UNITS}" in note for note in found.notes)


def test_select_unit_refuses_ambiguity_and_unknown_names(workspace: Path) -> None:
    write(workspace, "api/pyproject.toml", "")
    write(workspace, "web/package.json", "{}")
    found = discover_units(workspace)
    with pytest.raises(BadRequest) as ambiguous:
        select_unit(found, None)
    assert "api, web" in ambiguous.value.message
    with pytest.raises(BadRequest) as unknown:
        select_unit(found, "mobile")
    assert "'mobile'" in unknown.value.message and "api, web" in unknown.value.message
    assert select_unit(found, "./web/").id == "web"


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("py3{10,11}-tests", ["py310-tests", "py311-tests"]),
        ("{py310,py311}-{unit,lint}", ["py310-unit", "py310-lint", "py311-unit", "py311-lint"]),
        ("py3{8-10}", ["py38", "py39", "py310"]),
        ("py3{12-11}-x", ["py312-x", "py311-x"]),
        ("docs", ["docs"]),
        # Open ranges depend on the tox version; nested or unbalanced braces are not tox's.
        ("py3{10-}", None),
        ("py{3{10,11}}", None),
        ("py3{10", None),
    ],
)
def test_tox_generative_names(expression: str, names: list[str] | None) -> None:
    assert expand_env_names(expression) == names


def test_tsconfig_comments_and_trailing_commas(workspace: Path) -> None:
    write(
        workspace,
        "tsconfig.json",
        '{\n  // comment "with quotes"\n  "a": "keep // this, and ,}",  /* block */\n'
        '  "references": [{"path": "./core",},],\n}\n',
    )
    assert load_jsonc(workspace / "tsconfig.json") == {
        "a": "keep // this, and ,}",
        "references": [{"path": "./core"}],
    }


def test_uninterpreted_members_never_make_a_folder_a_non_member(workspace: Path) -> None:
    """With a member pattern ax-check cannot read, an undeclared folder may be a member."""
    write(workspace, "package.json", json.dumps({"workspaces": ["packages/**"]}))
    write(workspace, "tools/package.json", "{}")
    found = discover_units(workspace)
    assert [(unit.id, unit.satellite) for unit in found.units] == [(".", None), ("tools", None)]
    write(workspace, "package.json", json.dumps({"workspaces": ["packages/*"]}))
    satellite = discover_units(workspace).units[1].satellite
    assert satellite == "not a member of the workspace the root declares (package.json workspaces)"


def test_a_member_found_walking_up_makes_the_declaring_root_the_workspace(
    workspace: Path,
) -> None:
    write(workspace, "go.work", "go 1.22\nuse ./cmd/tool\n")
    write(workspace, "cmd/tool/go.mod", "module t\n")
    write(workspace, "cmd/tool/internal/x.go", "package internal\n")
    os.mkdir(workspace / ".git")
    location = locate(None, workspace / "cmd" / "tool" / "internal")
    assert location.workspace == workspace
    assert "declares cmd/tool as a member (go.work use)" in location.why
    choice = choose_unit(discover_units(workspace), location, None)
    assert choice.unit.id == "cmd/tool"
