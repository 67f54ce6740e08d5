"""What the client does with answers a reprise server would not give, and with its options.

These use a small HTTP server in the test process, which answers what each
test tells it to and keeps what it was sent.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any, Iterator

import pytest

from reprise_client import Client, RepriseError


class Fake(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.status = 200
        self.body = b"{}"
        self.delay = 0.0
        self.seen: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    server: Fake

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_any(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append(
            {"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body}
        )
        if self.server.delay:
            time.sleep(self.server.delay)
        self.send_response(self.server.status)
        self.send_header("Content-Length", str(len(self.server.body)))
        self.end_headers()
        self.wfile.write(self.server.body)

    do_GET = do_POST = do_DELETE = handle_any


@pytest.fixture
def fake() -> Iterator[Fake]:
    srv = Fake()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_one_of_socket_or_url():
    with pytest.raises(ValueError):
        Client()
    with pytest.raises(ValueError):
        Client(socket="/tmp/x.sock", url="http://127.0.0.1:1")
    with pytest.raises(ValueError):
        Client(url="ftp://127.0.0.1:1")
    with pytest.raises(ValueError):
        Client(socket="/tmp/x.sock", token="t" * 32)


def test_token_is_a_bearer_header_never_in_the_address(fake: Fake):
    c = Client(url=fake.url + "/?token=abcdef0123456789abcdef0123456789")
    assert c.url == fake.url
    c.save("s1")
    seen = fake.seen[-1]
    assert seen["headers"]["Authorization"] == "Bearer abcdef0123456789abcdef0123456789"
    assert seen["path"] == "/api/sessions/s1/save"
    assert seen["body"] == b""
    # An explicit token wins over the address's.
    Client(url=fake.url + "/?token=from-the-address", token="given-token").save("s1")
    assert fake.seen[-1]["headers"]["Authorization"] == "Bearer given-token"
    Client(url=fake.url).save("s1")
    assert "Authorization" not in fake.seen[-1]["headers"]


def test_bodies_leave_out_what_was_not_given(fake: Fake):
    c = Client(url=fake.url)
    c.append("s 1", "user", "hi")
    assert fake.seen[-1]["path"] == "/api/sessions/s%201/messages"
    assert json.loads(fake.seen[-1]["body"]) == {"role": "user", "content": "hi"}
    assert fake.seen[-1]["headers"]["Content-Type"] == "application/json"
    c.append("s1", "assistant", "ok", meta=True, buffer=True)
    assert json.loads(fake.seen[-1]["body"]) == {"role": "assistant", "content": "ok", "meta": True, "buffer": True}
    a = c.agent("ide/x")
    a.tool("toolu_1", name="Bash", input={"command": "ls"}, permission="allow", add_tool_use=True)
    assert fake.seen[-1]["path"] == "/api/agents/ide%2Fx/tool"
    assert json.loads(fake.seen[-1]["body"]) == {
        "tool_use_id": "toolu_1",
        "name": "Bash",
        "input": {"command": "ls"},
        "permission": "allow",
        "add_tool_use": True,
    }
    a.tool_result("toolu_1", output=None)
    assert fake.seen[-1]["path"] == "/api/agents/ide%2Fx/tool-result"
    assert json.loads(fake.seen[-1]["body"]) == {"tool_use_id": "toolu_1", "output": None}
    a.clear()
    assert json.loads(fake.seen[-1]["body"]) == {}
    c.conversation("s1", cursor="c/2", limit=5)
    assert fake.seen[-1]["method"] == "GET"
    assert fake.seen[-1]["path"] == "/api/sessions/s1?cursor=c%2F2&limit=5"
    c.remove_hook("s1", "h1")
    assert (fake.seen[-1]["method"], fake.seen[-1]["path"]) == ("DELETE", "/api/sessions/s1/hooks/h1")


def test_error_object_is_read(fake: Fake):
    fake.status = 409
    fake.body = json.dumps(
        {"error": "agent ide is busy", "code": "agent_busy", "status": 409, "busy": "a resume restore"}
    ).encode()
    with pytest.raises(RepriseError) as e:
        Client(url=fake.url).agent("ide").prompt("hi")
    assert (e.value.code, e.value.status, e.value.busy) == ("agent_busy", 409, "a resume restore")
    assert e.value.message == "agent ide is busy"
    assert "agent_busy" in str(e.value) and "a resume restore" in str(e.value)


@pytest.mark.parametrize(
    "status, body",
    [
        (502, b"Bad Gateway"),
        (500, b""),
        (400, b"[1, 2]"),
        (503, b"\xff\xfe not utf-8"),
        (404, b'{"code": 7, "error": "x"}'),
    ],
)
def test_an_answer_that_is_not_the_error_object_is_internal(fake: Fake, status: int, body: bytes):
    fake.status = status
    fake.body = body
    with pytest.raises(RepriseError) as e:
        Client(url=fake.url).delete_session("s1")
    assert e.value.code == "internal"
    assert e.value.status == status
    assert e.value.busy is None


def test_a_success_that_is_not_json_is_internal(fake: Fake):
    fake.body = b"<html>hello</html>"
    with pytest.raises(RepriseError) as e:
        Client(url=fake.url).save("s1")
    assert (e.value.code, e.value.status) == ("internal", 200)


def test_timeout(fake: Fake):
    fake.delay = 1.0
    with pytest.raises(TimeoutError):
        Client(url=fake.url, timeout=0.2).save("s1")


def test_every_method_is_typed_from_the_generated_types():
    import inspect
    import typing

    import reprise_client
    from reprise_client import types

    generated = {getattr(types, n) for n in types.__all__}
    for cls in (reprise_client.Client, reprise_client.Agent):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") or name in ("request", "agent", "openapi", "messages"):
                continue
            hints = typing.get_type_hints(fn)
            assert hints["return"] in generated, f"{cls.__name__}.{name}"
