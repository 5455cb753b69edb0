"""libcommon.procfs: listening sockets from /proc/net and who holds them, on real sockets."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from libcommon import procfs


def test_listeners_are_read_with_their_addresses_and_inodes() -> None:
    with socket.socket() as v4:
        v4.bind(("127.0.0.1", 0))
        v4.listen()
        port = v4.getsockname()[1]
        inode = os.fstat(v4.fileno()).st_ino
        assert procfs.tcp_listeners(port) == [
            procfs.Listener(socket.AF_INET, "127.0.0.1", port, inode)
        ]
        assert procfs.socket_holders({inode}, [os.getpid()]) == ({inode: os.getpid()}, [])
        assert inode in procfs.socket_inodes(os.getpid())
    assert procfs.tcp_listeners(port) == []


def test_an_ipv6_listener_and_a_connected_socket() -> None:
    if not socket.has_ipv6:
        pytest.skip("this Python has no IPv6 support")
    try:
        v6 = socket.socket(socket.AF_INET6)
        v6.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"::1 is not available here: {exc}")
    with v6:
        v6.listen()
        port = v6.getsockname()[1]
        with socket.create_connection(("::1", port)):
            # Only the listening socket is listed, not the connection to it.
            found = procfs.tcp_listeners(port)
        assert [(item.family, item.address) for item in found] == [(socket.AF_INET6, "::1")]


def test_the_command_line_of_a_process() -> None:
    command = procfs.command_of(os.getpid())
    assert command is not None and "pytest" in command
    assert procfs.command_of(2**22 + 1) is None


def test_a_table_over_the_bound_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "tcp"
    table.write_bytes(b"header\n" + b"x" * 64)
    monkeypatch.setattr(procfs, "NET_TABLES", ((str(table), socket.AF_INET),))
    monkeypatch.setattr(procfs, "NET_TABLE_READ_MAX_BYTES", 32)
    with pytest.raises(OSError, match="bytes of sockets"):
        procfs.tcp_listeners()
