"""Fixtures: a real reprise serve --write, on a Unix socket and over TCP.

The binary is built once per test run from the repository (two levels up)
with go build, unless REPRISE_BIN names one. Each server has a store,
settings file, HOME and XDG_STATE_HOME of its own in temp directories, and
is stopped when the run ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from helpers import REPO, Server
from reprise_client import Client


@pytest.fixture(scope="session")
def reprise_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("REPRISE_BIN")
    if given:
        return given
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: install Go, or set REPRISE_BIN to a reprise binary")
    out = tmp_path_factory.mktemp("bin") / "reprise"
    res = subprocess.run(
        [go, "build", "-o", str(out), "./cmd/reprise"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.fail(f"go build ./cmd/reprise failed:\n{res.stderr}")
    return str(out)


@pytest.fixture(scope="session")
def server(reprise_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(reprise_bin, tmp_path_factory.mktemp("unix"), tcp=False)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def tcp_server(reprise_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = Server(reprise_bin, tmp_path_factory.mktemp("tcp"), tcp=True)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def client(server: Server) -> Client:
    return server.client()


@pytest.fixture
def workdir(tmp_path: Path) -> str:
    """A directory that exists, for sessions' cwd."""
    d = tmp_path / "work"
    d.mkdir()
    return str(d)
