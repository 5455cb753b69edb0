"""Public faces load their names on first use, and only then."""

from __future__ import annotations

import subprocess
import sys

import pytest

from libcommon.lazy import lazy_getattr


def test_a_name_is_loaded_from_its_module_and_an_unknown_one_refused() -> None:
    load = lazy_getattr("libcommon", {"dumps": ".jsonio", "now": "libcommon.clock"})
    from libcommon import clock, jsonio

    assert load("dumps") is jsonio.dumps
    assert load("now") is clock.now
    with pytest.raises(AttributeError, match="module 'libcommon' has no attribute 'nope'"):
        load("nope")


@pytest.mark.parametrize("package", ["ax_log", "ax_policy", "ax_slate", "ax_report", "ax_preview"])
def test_importing_a_public_face_loads_no_core_module(package: str) -> None:
    code = (
        f"import sys, {package}; "
        f"print(sorted(m for m in sys.modules if m.startswith('{package}.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
