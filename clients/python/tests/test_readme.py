"""The host of the README runs against a real server and does what it says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import CTX_MARKER, PACKAGE_DIR, Server


def readme_host() -> str:
    text = (PACKAGE_DIR / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(found) == 1, "the README has one Python host"
    return found[0]


def test_readme_host(server: Server, tmp_path: Path):
    code = readme_host()
    assert len(code.splitlines()) <= 45
    host = tmp_path / "host.py"
    host.write_text(code, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("x", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(PACKAGE_DIR))
    res = subprocess.run(
        [sys.executable, str(host), server.socket_path],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    out = res.stdout.splitlines()
    assert f"context: {CTX_MARKER}" in out
    assert any(re.fullmatch(r"resumed \S+ -> \S+", line) for line in out)
    assert any(line.startswith("Bash: allow") for line in out)
    assert "user text list the files" in out
    assert "assistant tool_use Bash" in out
    assert "user tool_result " in out
    assert "turn over after 2 model calls" in out
    assert out.count("assistant tool_use Bash") == 2
    assert "assistant text those are the files" in out
    assert any(line.startswith("error: 404 ") for line in out)
