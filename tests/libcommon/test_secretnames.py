"""The one secret-name rule: ax-policy's path facts and ax-map's inventory both apply it."""

from __future__ import annotations

from pathlib import Path

import pytest

from libcommon.secretnames import SECRET_NAME_PATTERNS, secret_folder, secret_name_pattern


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        (".env", ".env*"),
        (".ENV.local", ".env*"),
        ("server.PEM", "*.pem"),
        ("id_ed25519.pub", "id_ed25519*"),
        ("credentials.json", "credentials*"),
        ("main.py", None),
        ("environment.py", None),
    ],
)
def test_secret_name_pattern(name: str, pattern: str | None) -> None:
    assert secret_name_pattern(name) == pattern


def test_secret_folder_is_found_anywhere_on_the_path() -> None:
    assert secret_folder(["home", ".SSH", "config"]) == ".SSH"
    assert secret_folder(["src", "aws", "x.py"]) is None


def test_ax_policy_applies_the_same_rule(tmp_path: Path) -> None:
    from ax_policy import validate_path

    for pattern in SECRET_NAME_PATTERNS:
        name = pattern.replace("*", "x")
        facts = validate_path(name, tmp_path, state_dir=tmp_path / "state")
        assert facts.secret, name
        assert pattern in (facts.secret_reason or "")
