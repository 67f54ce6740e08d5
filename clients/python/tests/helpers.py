"""What the tests share: a reprise serve --write process, ids, readers of a conversation."""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

from reprise_client import Client

PACKAGE_DIR = Path(__file__).resolve().parent.parent
REPO = PACKAGE_DIR.parent.parent

# What the SessionStart hook of the servers' settings gives as context.
CTX_MARKER = "ctx-marker"

SETTINGS: dict[str, Any] = {
    "hooks": {
        "SessionStart": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "echo '"
                        + json.dumps(
                            {
                                "hookSpecificOutput": {
                                    "hookEventName": "SessionStart",
                                    "additionalContext": CTX_MARKER,
                                }
                            }
                        )
                        + "'",
                    }
                ]
            }
        ]
    }
}

LISTEN_TIMEOUT = 30.0


def new_id(prefix: str) -> str:
    """An id no other test uses, and that no other id begins."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


class Server:
    """One reprise serve --write process and what it printed."""

    def __init__(self, binary: str, root: Path, *, tcp: bool, settings: dict[str, Any] | None = None):
        self.root = root
        self.tcp = tcp
        self.token = secrets.token_hex(16) if tcp else None
        home = root / "home"
        state = root / "state"
        for d in (home, state, home / ".config", home / ".cache"):
            d.mkdir(parents=True, exist_ok=True)
        self.settings = root / "settings.json"
        self.settings.write_text(json.dumps(SETTINGS if settings is None else settings), encoding="utf-8")
        self.stderr_path = root / "serve.stderr"
        args = [
            binary,
            "--store",
            str(root / "reprise.db"),
            "serve",
            "--write",
        ]
        if tcp:
            args += ["--addr", "127.0.0.1:0"]
        else:
            self.socket_path = str(root / "s.sock")
            args += ["--socket", self.socket_path]
        args += ["--settings", str(self.settings), "--no-default-settings", "--json"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("REPRISE_") and not k.startswith("XDG_")}
        env["HOME"] = str(home)
        env["XDG_STATE_HOME"] = str(state)
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        env["XDG_CACHE_HOME"] = str(home / ".cache")
        if self.token:
            env["REPRISE_SERVE_TOKEN"] = self.token
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            args,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        try:
            line = self._lines.get(timeout=LISTEN_TIMEOUT)
        except queue.Empty:
            self.stop()
            raise RuntimeError(f"serve printed nothing in {LISTEN_TIMEOUT}s; stderr: {self.stderr()}") from None
        if not line:
            self.stop()
            raise RuntimeError(f"serve exited before it listened ({self.proc.returncode}); stderr: {self.stderr()}")
        self.info: dict[str, Any] = json.loads(line)
        if tcp:
            self.printed_url: str = self.info["url"]
            # The address with its ?token= query cut off.
            self.url = self.printed_url.split("?", 1)[0].rstrip("/")

    def _read_stdout(self) -> None:
        # Keeps reading for as long as the server runs, so that it never
        # blocks on a full pipe; the first line is what the fixture waits for.
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(b"")

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def client(self, **kw: Any) -> Client:
        if self.tcp:
            kw.setdefault("token", self.token)
            return Client(url=self.url, timeout=60, **kw)
        return Client(socket=self.socket_path, timeout=60, **kw)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()


def texts(message: dict[str, Any]) -> str:
    """The text of a conversation message's text blocks, joined."""
    return "\n".join(b.get("text", "") for b in message["content"] if b.get("type") == "text")


def blocks(conversation: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    """Every content block of type kind in a conversation page, in order."""
    return [b for m in conversation["messages"] for b in m["content"] if b.get("type") == kind]
