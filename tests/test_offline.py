"""The suite itself refuses network access, so a test that needed it would fail here."""

from __future__ import annotations

import socket

import pytest


def test_connecting_off_the_machine_is_refused():
    with socket.socket() as sock, pytest.raises(RuntimeError, match="network"):
        sock.connect(("192.0.2.1", 80))  # TEST-NET-1: never routable
