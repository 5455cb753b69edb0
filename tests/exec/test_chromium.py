"""ax-exec's Chromium launcher: the system browser, contained, with a throwaway profile."""

from __future__ import annotations

import json
import os
import shutil
import stat
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from browserpage import served

from ax_exec import CHROMIUM_PACKAGE, find_chromium, launched_chromium
from ax_exec.chromium import chromium_flags
from libcommon.errors import OperationFailed, Unsupported
from libcommon.procfs import read_proc

CHROMIUM = find_chromium(os.environ)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason=f"no chromium on PATH (Debian package {CHROMIUM_PACKAGE!r})"
)


def alive(pid: int) -> bool:
    info = read_proc(pid)
    return info is not None and info.alive


@pytest.fixture
def page() -> Iterator[str]:
    with served() as url:
        yield url + "/"


def test_find_chromium_reads_only_absolute_path_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted = tmp_path / "chromium"
    planted.write_text("#!/bin/sh\nexit 0\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    assert find_chromium({"PATH": f":.:bin:{os.curdir}"}) is None
    assert find_chromium({"PATH": str(tmp_path)}) == planted.resolve()


def test_no_chromium_is_toolchain_unavailable_naming_the_package(tmp_path: Path) -> None:
    with (
        pytest.raises(Unsupported) as caught,
        launched_chromium(tmp_path / "state", {"PATH": str(tmp_path)}),
    ):
        pass
    assert caught.value.reason == "toolchain-unavailable"
    assert f"apt-get install {CHROMIUM_PACKAGE}" in (caught.value.hint or "")
    assert not (tmp_path / "state" / "tmp").exists() or not any(
        (tmp_path / "state" / "tmp").iterdir()
    )


def test_flags_stop_background_networking_and_sandbox_only_as_root(tmp_path: Path) -> None:
    flags = chromium_flags(tmp_path, as_root=False)
    for flag in (
        "--headless",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--remote-debugging-port=0",
        f"--user-data-dir={tmp_path}",
    ):
        assert flag in flags
    assert "--no-sandbox" not in flags
    assert "--no-sandbox" in chromium_flags(tmp_path, as_root=True)


def test_a_browser_that_exits_at_once_fails_with_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 3\n")
    fake.chmod(0o755)
    with (
        pytest.raises(OperationFailed, match=r"(?s)exited \(status 3\).*cannot open display"),
        launched_chromium(tmp_path / "state", {"PATH": str(fake.parent)}, timeout_s=5),
    ):
        pass
    assert list((tmp_path / "state" / "tmp").iterdir()) == []


def test_a_silent_browser_times_out_and_is_killed(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "chromium"
    fake.parent.mkdir()
    pidfile = tmp_path / "pid"
    fake.write_text(f"#!/bin/sh\necho $$ > {pidfile}\nexec {shutil.which('sleep')} 60\n")
    fake.chmod(0o755)
    with (
        pytest.raises(OperationFailed, match=r"within 0\.5s"),
        launched_chromium(tmp_path / "state", {"PATH": str(fake.parent)}, timeout_s=0.5),
    ):
        pass
    assert not alive(int(pidfile.read_text()))
    assert list((tmp_path / "state" / "tmp").iterdir()) == []


@needs_chromium
def test_chromium_serves_cdp_on_loopback_and_is_gone_after(tmp_path: Path, page: str) -> None:
    state = tmp_path / "state"
    with launched_chromium(state, os.environ) as browser:
        assert browser.cdp_url.startswith(f"ws://127.0.0.1:{browser.port}/devtools/browser/")
        assert browser.profile.parent == state / "tmp"
        assert stat.S_IMODE((state / "tmp").stat().st_mode) == 0o700
        assert browser.alive()
        info = read_proc(browser.pid)
        assert info is not None
        version = f"http://127.0.0.1:{browser.port}/json/version"
        with urllib.request.urlopen(version, timeout=5) as answer:
            assert json.load(answer)["webSocketDebuggerUrl"] == browser.cdp_url
        # A new tab on the loopback page, over the DevTools HTTP interface.
        request = urllib.request.Request(
            f"http://127.0.0.1:{browser.port}/json/new?{page}", method="PUT"
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert json.load(answer)["url"] == page
        pid, profile = browser.pid, browser.profile
    assert not alive(pid)
    assert not profile.exists()
    assert list((state / "tmp").iterdir()) == []
