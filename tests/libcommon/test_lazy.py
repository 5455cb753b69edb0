"""Public faces load their names on first use, and only then."""

from __future__ import annotations

import subprocess
import sys

import pytest

from libcommon.lazy import lazy_getattr


def test_a_name_is_loaded_once_from_its_module_and_an_unknown_one_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import types

    package = types.ModuleType("lazy_probe")
    monkeypatch.setitem(sys.modules, "lazy_probe", package)
    load = lazy_getattr("lazy_probe", {"dumps": "libcommon.jsonio", "now": "libcommon.clock"})
    from libcommon import clock, jsonio

    assert load("dumps") is jsonio.dumps
    assert load("now") is clock.now
    assert package.dumps is jsonio.dumps  # kept on the package after the first lookup
    with pytest.raises(AttributeError, match="module 'lazy_probe' has no attribute 'nope'"):
        load("nope")


@pytest.mark.parametrize("package", ["ax_log", "ax_policy", "ax_slate", "ax_report", "ax_preview"])
def test_importing_a_public_face_loads_no_core_module(package: str) -> None:
    code = (
        f"import sys, {package}; "
        f"print(sorted(m for m in sys.modules if m.startswith('{package}.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
