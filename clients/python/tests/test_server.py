"""The client against a real reprise serve --write, on its Unix socket and over TCP."""

from __future__ import annotations

import pytest

from helpers import CTX_MARKER, Server, blocks, new_id, texts
from reprise_client import Client, RepriseError


def deny_bash_hook(reason: str) -> dict:
    command = (
        "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\","
        f"\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"{reason}\"}}}}'"
    )
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}


def test_two_sessions_start_append_resume(client: Client, workdir: str):
    a = client.create_session(workdir, id=new_id("a"))
    b = client.create_session(workdir)
    assert a["cwd"] == workdir and a["messages"] == 0
    assert b["id"] and b["id"] != a["id"]

    agent = client.agent(new_id("ide"))
    started = agent.start(a["id"])
    assert started["restored"] is True
    assert started["to"] == a["id"]
    assert CTX_MARKER in started["context"]
    conv = client.conversation(a["id"])
    meta = [m for m in conv["messages"] if m["meta"]]
    assert len(meta) == 1
    assert CTX_MARKER in texts(meta[0])
    assert meta[0]["uuid"] == started["injected_message"]

    user = client.append(a["id"], "user", "hello there")
    assert user["session"] == a["id"] and user["buffered"] is False
    answer = client.append(a["id"], "assistant", [{"type": "text", "text": "general kenobi"}])
    conv = client.conversation(a["id"])
    assert [m["uuid"] for m in conv["messages"]][-2:] == [user["uuid"], answer["uuid"]]
    assert [m["role"] for m in conv["messages"]] == ["user", "user", "assistant"]
    assert texts(conv["messages"][-1]) == "general kenobi"

    resumed = agent.resume(b["id"])
    assert resumed["restored"] is True
    assert resumed["from"] == a["id"]
    assert resumed["to"] == b["id"]
    assert CTX_MARKER in resumed["context"]
    conv_b = client.conversation(b["id"])
    assert [m["uuid"] for m in conv_b["messages"] if m["meta"]] == [resumed["injected_message"]]

    # Resuming the session the agent is on does nothing.
    again = agent.resume(b["id"])
    assert again["restored"] is False and again["to"] == b["id"]


def test_tool_call_decided_and_its_result_recorded(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    agent = client.agent(new_id("tools"))
    agent.start(s)
    client.append(s, "user", "read the file")
    call = "toolu_" + new_id("read").replace("-", "")
    decision = agent.tool(
        call, name="Read", input={"file_path": "/etc/hostname"}, permission="allow", add_tool_use=True
    )
    assert decision["decision"] == "allow"
    assert decision["interrupted"] is False and decision["halted"] is False
    feedback = agent.tool_result(call, output="the-file-contents")
    assert feedback["already_recorded"] is False
    assert feedback["blocked"] is False

    conv = client.conversation(s)
    uses = blocks(conv, "tool_use")
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [(call, "Read", {"file_path": "/etc/hostname"})]
    results = blocks(conv, "tool_result")
    assert [r["tool_use_id"] for r in results] == [call]
    assert "the-file-contents" in str(results[0]["content"])
    roles = [m["role"] for m in conv["messages"]]
    assert roles[-2:] == ["assistant", "user"]

    # A second result of the call is not kept.
    twice = agent.tool_result(call, output="other")
    assert twice["already_recorded"] is True
    assert "other" not in str(blocks(client.conversation(s), "tool_result"))


def test_session_hook_takes_effect_then_is_removed(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    agent = client.agent(new_id("guarded"))
    agent.start(s)
    client.append(s, "user", "run things")
    added = client.add_hooks(s, deny_bash_hook("no-bash-here"))
    assert added["session"] == s
    assert len(added["ids"]) == 1

    denied_id = "toolu_" + new_id("bash1").replace("-", "")
    denied = agent.tool(denied_id, name="Bash", input={"command": "ls"}, permission="allow", add_tool_use=True)
    assert denied["decision"] == "deny"
    assert "no-bash-here" in denied["reason"]
    # The deny is the call's error result, what the model is told.
    result = [r for r in blocks(client.conversation(s), "tool_result") if r["tool_use_id"] == denied_id]
    assert len(result) == 1 and result[0].get("is_error") is True

    # The matcher is Bash: another tool is not denied.
    read_id = "toolu_" + new_id("read").replace("-", "")
    read = agent.tool(read_id, name="Read", input={"file_path": "/x"}, permission="allow", add_tool_use=True)
    assert read["decision"] == "allow"
    agent.tool_result(read_id, output="x")

    removed = client.remove_hook(s, added["ids"][0])
    assert removed == {"session": s, "id": added["ids"][0], "removed": True}
    with pytest.raises(RepriseError) as e:
        client.remove_hook(s, added["ids"][0])
    assert e.value.code == "hook_not_found" and e.value.status == 404

    allowed_id = "toolu_" + new_id("bash2").replace("-", "")
    allowed = agent.tool(allowed_id, name="Bash", input={"command": "ls"}, permission="allow", add_tool_use=True)
    assert allowed["decision"] == "allow"


def test_missing_session_conversation(client: Client):
    with pytest.raises(RepriseError) as e:
        client.conversation(new_id("zz-missing"))
    assert (e.value.code, e.value.status) == ("session_not_found", 404)


def test_missing_session(client: Client):
    missing = new_id("zz-missing")
    with pytest.raises(RepriseError) as e:
        client.conversation(missing)
    assert e.value.status == 404
    assert missing in e.value.message
    with pytest.raises(RepriseError) as e:
        client.agent(new_id("lost")).start(missing)
    assert (e.value.code, e.value.status) == ("session_not_found", 404)
    with pytest.raises(RepriseError) as e:
        client.append(missing, "user", "hi")
    assert e.value.code == "session_not_found"


def test_bad_bodies(client: Client, workdir: str):
    for body in ({"cwd": 5}, {"cwd": workdir, "colour": "blue"}, {}, b"{not json"):
        with pytest.raises(RepriseError) as e:
            client.request("POST", "/api/sessions", body)
        assert (e.value.code, e.value.status) == ("bad_request", 400), body
    with pytest.raises(RepriseError) as e:
        client.create_session(workdir, id="-starts-with-a-dash")
    assert (e.value.code, e.value.status) == ("invalid_id", 400)
    taken = client.create_session(workdir)["id"]
    with pytest.raises(RepriseError) as e:
        client.create_session(workdir, id=taken)
    assert (e.value.code, e.value.status) == ("session_exists", 409)


def test_no_such_route(client: Client):
    with pytest.raises(RepriseError) as e:
        client.request("POST", "/api/agents/someone/no-such-action", {})
    assert (e.value.code, e.value.status) == ("not_found", 404)


def test_no_such_route_is_404(client: Client):
    for method, path in (("POST", "/api/agents/someone/no-such-action"), ("GET", "/api/no-such-route")):
        with pytest.raises(RepriseError) as e:
            client.request(method, path, {} if method == "POST" else None)
        assert e.value.status == 404, path
        assert path in e.value.message


def test_path_segments_are_quoted(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    # Sent as one segment, a slash or a question mark reaches the route as
    # part of the name, which is then not an id; unquoted, they would name
    # another route or a query.
    for name in ("a/b", "x?y"):
        with pytest.raises(RepriseError) as e:
            client.agent(name).start(s)
        assert e.value.code == "invalid_id", name
    with pytest.raises(RepriseError) as e:
        client.conversation(s + "?limit=1")
    # The whole name, question mark included, is the session looked for.
    assert e.value.status == 404 and f"{s}?limit=1" in e.value.message


def test_buffer_and_save(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    kept = client.append(s, "user", "buffered words", buffer=True)
    assert kept["buffered"] is True
    saved = client.save(s)
    assert saved == {"session": s, "saved": 1}
    conv = client.conversation(s)
    assert [texts(m) for m in conv["messages"]] == ["buffered words"]
    assert client.save(s)["saved"] == 0


def test_meta_message_and_pages(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    uuids = [
        client.append(s, "user", "one")["uuid"],
        client.append(s, "user", "aside", meta=True)["uuid"],
        client.append(s, "assistant", "two")["uuid"],
    ]
    first = client.conversation(s, limit=1)
    assert [m["uuid"] for m in first["messages"]] == uuids[:1]
    assert first.get("next_cursor")
    second = client.conversation(s, cursor=first["next_cursor"], limit=1)
    assert [m["uuid"] for m in second["messages"]] == uuids[1:2]
    assert second["messages"][0]["meta"] is True
    assert [m["uuid"] for m in client.messages(s, limit=1)] == uuids
    assert [m["meta"] for m in client.messages(s)] == [False, True, False]


def test_newest_first_and_the_events_filtered(client: Client, workdir: str):
    s = client.create_session(workdir, id=new_id("logged"))["id"]
    for text in ("one", "two", "three"):
        client.append(s, "user", text)
    newest = client.conversation(s, order="newest", limit=2)
    assert [texts(m) for m in newest["messages"]] == ["three", "two"]

    stream = f"session/{s}"
    first = client.events(stream=stream, type="MessageAppended", limit=2)
    assert first["total"] == 3
    assert [(e["stream"], e["type"], e["seq"]) for e in first["events"]] == [
        (stream, "MessageAppended", 2),
        (stream, "MessageAppended", 3),
    ]
    assert first.get("next_cursor")
    rest = client.events(stream=stream, type="MessageAppended", limit=2, cursor=first["next_cursor"])
    assert [e["seq"] for e in rest["events"]] == [4] and rest["from"] == 3
    assert client.events(stream=stream, until="2000-01-01")["events"] == []
    with pytest.raises(RepriseError) as err:
        client.events(since="yesterday")
    assert err.value.code == "bad_request" and err.value.status == 400


def test_delete_session(client: Client, workdir: str):
    s = client.create_session(workdir)["id"]
    client.append(s, "user", "soon gone")
    assert client.delete_session(s) == {"session": s, "deleted": True}
    with pytest.raises(RepriseError) as e:
        client.append(s, "user", "too late")
    assert (e.value.code, e.value.status) == ("session_deleted", 409)
    with pytest.raises(RepriseError) as e:
        client.conversation(s)
    assert e.value.status == 404 and "deleted" in e.value.message


def test_every_agent_action(client: Client, workdir: str, tmp_path):
    agent = client.agent(new_id("life"))
    fresh = agent.new(workdir, id=new_id("fresh"), prompt="first words")
    assert fresh["restored"] is True and CTX_MARKER in fresh["context"]
    s = fresh["to"]
    assert s.startswith("fresh-")

    prompted = agent.prompt("please list the files")
    assert prompted["session"] == s and prompted["blocked"] is False
    client.append(s, "assistant", "done listing")
    stopped = agent.stop("end_turn")
    assert stopped["blocked"] is False and stopped["hooks"] == []

    fired = agent.fire("Notification", "n1", fields={"message": "waiting", "notification_type": "idle_prompt"})
    assert fired["id"] == "n1" and fired["already_recorded"] is False
    assert agent.fire("Notification", "n1", fields={"message": "waiting"})["already_recorded"] is True
    with pytest.raises(RepriseError) as e:
        agent.fire("SessionStart", "n2")
    assert e.value.code == "bad_fire"

    forked = agent.fork(s)
    assert forked["to"] != s and forked["from"] == s
    fork_texts = [texts(m) for m in client.conversation(forked["to"])["messages"] if not m["meta"]]
    assert "please list the files" in fork_texts and "done listing" in fork_texts

    compacted = agent.compact("we listed the files", trigger="manual")
    assert compacted["restored"] is True and compacted["from"] == forked["to"]
    summary = client.conversation(compacted["to"])
    assert "we listed the files" in str(summary["messages"])

    cleared = agent.clear()
    assert cleared["from"] == compacted["to"] and cleared["to"] != compacted["to"]

    ended = agent.end("logout")
    assert ended["from"] == cleared["to"]
    with pytest.raises(RepriseError) as e:
        agent.prompt("anyone there?")
    assert (e.value.code, e.value.status) == ("no_current_session", 409)

    finished = agent.finish()
    assert finished["agent"] == agent.name and finished["finished"] is False

    with pytest.raises(RepriseError) as e:
        agent.end("bogus")
    assert e.value.code in ("bad_reason", "no_current_session")
    with pytest.raises(RepriseError) as e:
        client.agent(new_id("never")).finish()
    assert (e.value.code, e.value.status) == ("agent_not_found", 404)


def test_openapi_served_is_the_contract(client: Client):
    import json

    from helpers import REPO

    served = client.openapi()
    assert served == json.loads((REPO / "api" / "openapi.json").read_text(encoding="utf-8"))


def test_tcp_needs_the_token(tcp_server: Server, workdir: str):
    ok = tcp_server.client()
    made = ok.create_session(workdir)
    assert ok.conversation(made["id"])["session"] == made["id"]

    for bad in (Client(url=tcp_server.url, timeout=30), Client(url=tcp_server.url, token="0" * 32, timeout=30)):
        with pytest.raises(RepriseError) as e:
            bad.create_session(workdir)
        assert (e.value.code, e.value.status) == ("unauthorized", 401)

    # The address serve prints carries the token; the client sends it as the header.
    printed = Client(url=tcp_server.printed_url, timeout=30)
    assert printed.url == tcp_server.url
    assert printed.token == tcp_server.token
    agent = printed.agent(new_id("tcp"))
    assert CTX_MARKER in agent.start(made["id"])["context"]
