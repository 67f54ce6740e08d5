"""Agent.run_turn against a real server whose PreToolUse and Stop hooks note each run in a file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any, Iterator

import pytest

from helpers import Server, blocks, new_id, texts
from reprise_client import Agent, Client, TurnAborted
from reprise_client.types import ConversationMessage, TurnAsk, TurnCall


def noting_hook(log: Path) -> dict[str, Any]:
    """A command hook that appends its input, the JSON it read, to log; it decides nothing."""
    return {"hooks": [{"type": "command", "command": f"{{ cat; echo; }} >> {shlex.quote(str(log))}"}]}


@pytest.fixture(scope="module")
def hooked(reprise_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("turn")
    logs = root / "logs"
    logs.mkdir()
    settings = {
        "hooks": {
            "PreToolUse": [dict(noting_hook(logs / "pre.log"), matcher="*")],
            "Stop": [noting_hook(logs / "stop.log")],
        }
    }
    srv = Server(reprise_bin, root, tcp=False, settings=settings)
    srv.logs = logs  # type: ignore[attr-defined]
    try:
        yield srv
    finally:
        srv.stop()


def hook_runs(server: Server, name: str, session: str | None) -> list[dict[str, Any]]:
    """The inputs of the hook runs noted in name's log for session (None: every session's), in order."""
    path: Path = server.logs / name  # type: ignore[attr-defined]
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    runs: list[dict[str, Any]] = []
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = decoder.raw_decode(text, i)
        if session is None or obj.get("session_id") == session:
            runs.append(obj)
    return runs


class Script:
    """A model that answers from a list, in order, and keeps what it was asked."""

    def __init__(self, *answers: Any):
        self.answers = list(answers)
        self.asked: list[list[ConversationMessage]] = []

    def __call__(self, messages: list[ConversationMessage]) -> Any:
        self.asked.append(messages)
        if len(self.asked) > len(self.answers):
            raise AssertionError(f"the model was asked {len(self.asked)} times, scripted for {len(self.answers)}")
        return self.answers[len(self.asked) - 1]


class Recording(Client):
    """A client that keeps the names of the agents it was asked for."""

    def __init__(self, **kw: Any):
        super().__init__(**kw)
        self.driven: list[str] = []

    def agent(self, name: str) -> Agent:
        self.driven.append(name)
        return super().agent(name)


def tool_use(call_id: str, name: str, input: dict[str, Any], text: str = "on it") -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}, {"type": "tool_use", "id": call_id, "name": name, "input": input}]


def call_id() -> str:
    return "toolu_" + new_id("c").replace("-", "")


def started(client: Client, workdir: str, prefix: str) -> tuple[str, str]:
    """A new session, current for a new agent: (agent name, session id)."""
    session = client.create_session(workdir)["id"]
    name = new_id(prefix)
    client.agent(name).start(session)
    return name, session


def last_result(messages: list[ConversationMessage]) -> dict[str, Any]:
    results = [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]
    assert results, "the model was given no tool_result"
    return dict(results[-1])


def test_each_ask_is_sent_only_what_is_new(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "since")
    agent = client.agent(name)
    sent: list[dict[str, Any]] = []
    step = agent.turn

    def noting(**body: Any) -> Any:
        sent.append(dict(body))
        return step(**body)

    agent.turn = noting  # type: ignore[method-assign]
    cid = call_id()
    model = Script(tool_use(cid, "Echo", {"text": "hi"}), "done", "still done")
    tools = {"Echo": lambda call: "hi"}
    agent.run_turn("say hi", model=model, tools=tools, permission="allow")
    agent.run_turn("again", model=model, tools=tools, permission="allow")
    whole = [m["uuid"] for m in client.conversation(session)["messages"]]
    assert len(model.asked) == 3
    for i, asked in enumerate(model.asked):
        assert [m["uuid"] for m in asked] == whole[: len(asked)], f"ask {i} is not the conversation's beginning"
    assert len(model.asked[0]) < len(model.asked[1]) < len(model.asked[2])
    # The first step knows nothing; every later one names a message of the conversation.
    assert "since" not in sent[0]
    assert sent[1:] and all(b.get("since") in whole for b in sent[1:]), [b.get("since") for b in sent]


def test_whole_turn(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "whole")
    cid = call_id()
    model = Script(tool_use(cid, "Echo", {"text": "hello"}), "all done")
    ran: list[TurnCall] = []

    def echo(call: TurnCall) -> Any:
        ran.append(call)
        return {"echoed": call["input"]["text"]}

    outcome = client.agent(name).run_turn("say hello", model=model, tools={"Echo": echo}, permission="allow")
    assert outcome["requests"] == 2
    assert outcome["blocked"] is False and outcome["halted"] is False and outcome["capped"] is False
    assert [c["tool_use_id"] for c in ran] == [cid]
    # The first ask holds the prompt; the second the tool's result.
    assert "say hello" in texts(dict(model.asked[0][-1]))
    assert last_result(model.asked[1])["tool_use_id"] == cid

    conv = client.conversation(session)
    uses = blocks(conv, "tool_use")
    assert [(u["id"], u["name"], u["input"]) for u in uses] == [(cid, "Echo", {"text": "hello"})]
    results = blocks(conv, "tool_result")
    assert [r["tool_use_id"] for r in results] == [cid]
    assert "echoed" in json.dumps(results[0]["content"]) and "hello" in json.dumps(results[0]["content"])
    assert not results[0].get("is_error")
    assert conv["messages"][-1]["role"] == "assistant"
    assert texts(conv["messages"][-1]) == "all done"

    pre = hook_runs(hooked, "pre.log", session)
    assert [(r["tool_name"], r["tool_use_id"]) for r in pre] == [("Echo", cid)]
    assert len(hook_runs(hooked, "stop.log", session)) == 1


def test_crash_mid_tool_and_resume(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "crash")
    cid = call_id()
    model = Script(tool_use(cid, "Slow", {"n": 1}), "finished after the crash")
    calls: list[str] = []

    def slow(call: TurnCall) -> Any:
        calls.append(call["tool_use_id"])
        if len(calls) == 1:
            raise TurnAborted("the host died here")
        return "ran again"

    with pytest.raises(TurnAborted):
        client.agent(name).run_turn("do the slow thing", model=model, tools={"Slow": slow}, permission="allow")
    assert len(model.asked) == 1
    assert len(hook_runs(hooked, "stop.log", session)) == 0

    # Another host, another client: it goes on with the turn the log shows.
    again = hooked.client()
    outcome = again.agent(name).run_turn(model=model, tools={"Slow": slow}, permission="allow")
    assert outcome["requests"] == 1
    assert len(model.asked) == 2
    assert calls == [cid], "a tool that is not repeatable is not run again"
    cut = last_result(model.asked[1])
    assert cut["tool_use_id"] == cid and "interrupt" in json.dumps(cut["content"]).lower()

    conv = client.conversation(session)
    results = blocks(conv, "tool_result")
    assert [r["tool_use_id"] for r in results] == [cid]
    assert "interrupt" in json.dumps(results[0]["content"]).lower()
    assert texts(conv["messages"][-1]) == "finished after the crash"
    assert len(hook_runs(hooked, "pre.log", session)) == 1
    assert len(hook_runs(hooked, "stop.log", session)) == 1


def test_crash_of_a_repeatable_tool_runs_it_again(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "repeat")
    cid = call_id()
    model = Script(tool_use(cid, "Read", {"path": "x"}), "read it")
    seen: list[TurnCall] = []

    def read(call: TurnCall) -> Any:
        seen.append(call)
        if len(seen) == 1:
            raise TurnAborted()
        return "contents of x"

    agent = client.agent(name)
    with pytest.raises(TurnAborted):
        agent.run_turn("read x", model=model, tools={"Read": read}, permission="allow", repeatable=["Read"])
    agent.run_turn(model=model, tools={"Read": read}, permission="allow", repeatable=["Read"])
    assert [(c["tool_use_id"], c["again"]) for c in seen] == [(cid, False), (cid, True)]
    assert "contents of x" in json.dumps(last_result(model.asked[1])["content"])
    assert len(hook_runs(hooked, "pre.log", session)) == 1


def test_an_interrupt_stops_the_loop(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "intr")
    model = Script(tool_use(call_id(), "Wait", {}), "done")

    def wait(call: TurnCall) -> Any:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client.agent(name).run_turn("wait", model=model, tools={"Wait": wait}, permission="allow")
    assert blocks(client.conversation(session), "tool_result") == []


def test_failures_and_unknown_tools_are_error_results(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "fail")
    broken, missing = call_id(), call_id()
    answer = [
        {"type": "tool_use", "id": broken, "name": "Broken", "input": {}},
        {"type": "tool_use", "id": missing, "name": "Nowhere", "input": {}},
    ]
    model = Script(answer, "both failed")

    def fails(call: TurnCall) -> Any:
        raise ValueError("disk on fire")

    outcome = client.agent(name).run_turn("try both", model=model, tools={"Broken": fails}, permission="allow")
    assert outcome["requests"] == 2
    given = {b["tool_use_id"]: b for m in model.asked[1] for b in m["content"] if b.get("type") == "tool_result"}
    assert set(given) == {broken, missing}, "both results went in one step"
    assert given[broken].get("is_error") is True and "disk on fire" in json.dumps(given[broken]["content"])
    assert given[missing].get("is_error") is True
    assert "No such tool available: Nowhere" in json.dumps(given[missing]["content"])


def test_calls_left_to_ask(hooked: Server, workdir: str):
    client = hooked.client()
    asked: list[tuple[str, str, str]] = []

    def run(answer: Any) -> tuple[Script, list[str], str, str]:
        name, session = started(client, workdir, "ask")
        cid = call_id()
        model = Script(tool_use(cid, "Write", {"path": "out.txt"}), "ok")
        ran: list[str] = []

        def write(call: TurnCall) -> Any:
            ran.append(call["tool_use_id"])
            return "write-marker-ok"

        def ask(call: TurnAsk, reason: str) -> Any:
            asked.append((call["tool_use_id"], call["name"], reason))
            return answer

        outcome = client.agent(name).run_turn("write it", model=model, tools={"Write": write}, ask=ask)
        assert outcome["requests"] == 2
        assert asked[-1][:2] == (cid, "Write")
        return model, ran, cid, session

    model, ran, cid, session = run(False)
    assert ran == []
    refused = last_result(model.asked[1])
    assert refused["tool_use_id"] == cid and refused.get("is_error") is True
    assert "write-marker-ok" not in json.dumps(refused["content"]) and "user" in json.dumps(refused["content"]).lower()
    assert len(hook_runs(hooked, "pre.log", session)) == 1

    model, ran, cid, _ = run("not in this directory, please")
    assert ran == []
    assert "not in this directory, please" in json.dumps(last_result(model.asked[1])["content"])

    model, ran, cid, _ = run(True)
    assert ran == [cid]
    allowed = last_result(model.asked[1])
    assert not allowed.get("is_error") and "write-marker-ok" in json.dumps(allowed["content"])


def test_calls_left_to_ask_without_ask_are_refused(hooked: Server, workdir: str):
    client = hooked.client()
    name, _ = started(client, workdir, "noask")
    cid = call_id()
    model = Script(tool_use(cid, "Write", {}), "fine")
    ran: list[str] = []

    def write(call: TurnCall) -> Any:
        ran.append(call["tool_use_id"])
        return "w"

    client.agent(name).run_turn("write", model=model, tools={"Write": write})
    assert ran == []
    refused = last_result(model.asked[1])
    assert refused["tool_use_id"] == cid and refused.get("is_error") is True


def test_subagent_turn(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "parent")
    cid = call_id()
    asked: list[str] = []

    def model(messages: list[ConversationMessage]) -> Any:
        first = texts(dict(messages[0])) if messages else ""
        user = " ".join(texts(dict(m)) for m in messages if m["role"] == "user")
        asked.append("sub" if "count the files" in first and "delegate" not in user else "parent")
        if asked[-1] == "sub":
            return "there are three files"
        if not any(b.get("type") == "tool_result" for m in messages for b in m["content"]):
            return tool_use(cid, "Agent", {"description": "count", "prompt": "count the files", "subagent_type": "general"})
        return "the subagent says: " + json.dumps(last_result(messages)["content"])

    outcome = client.agent(name).run_turn("delegate the count", model=model, tools={}, permission="allow", subagents=True)
    assert asked == ["parent", "sub", "parent"]
    assert outcome["requests"] == 3
    results = blocks(client.conversation(session), "tool_result")
    assert [r["tool_use_id"] for r in results] == [cid]
    assert "there are three files" in json.dumps(results[0]["content"])
    assert "there are three files" in texts(client.conversation(session)["messages"][-1])


def test_subagent_turn_goes_on_after_a_crash(hooked: Server, workdir: str):
    client = hooked.client()
    name, session = started(client, workdir, "parent")
    parent_call, sub_call = call_id(), call_id()
    asked: list[str] = []
    probes: list[str] = []

    def model(messages: list[ConversationMessage]) -> Any:
        sub = "probe it" in texts(dict(messages[0]))
        results = [b for m in messages for b in m["content"] if b.get("type") == "tool_result"]
        asked.append("sub" if sub else "parent")
        if sub:
            return tool_use(sub_call, "Probe", {}) if not results else "the probe was cut off"
        if not results:
            return tool_use(parent_call, "Agent", {"description": "probe", "prompt": "probe it"})
        return "parent done"

    def probe(call: TurnCall) -> Any:
        probes.append(call["tool_use_id"])
        raise TurnAborted()

    tools = {"Probe": probe}
    with pytest.raises(TurnAborted):
        client.agent(name).run_turn("delegate", model=model, tools=tools, permission="allow", subagents=True)
    assert asked == ["parent", "sub"]
    again = Recording(socket=hooked.socket_path, timeout=60)
    outcome = again.agent(name).run_turn(model=model, tools=tools, permission="allow", subagents=True)
    assert asked == ["parent", "sub", "sub", "parent"]
    assert outcome["requests"] == 2
    assert probes == [sub_call]
    results = blocks(client.conversation(session), "tool_result")
    assert [r["tool_use_id"] for r in results] == [parent_call]
    assert "the probe was cut off" in json.dumps(results[0]["content"])
    pre = hook_runs(hooked, "pre.log", None)
    assert [r["tool_use_id"] for r in pre].count(parent_call) == 1
    sub_pre = [r for r in pre if r.get("tool_use_id") == sub_call]
    assert len(sub_pre) == 1
    assert sub_pre[0]["session_id"] == session, "a subagent's hooks name the parent's session"
    subs = set(again.driven) - {name}
    assert len(subs) == 1, "one subagent, driven again after the crash"
    sub_session = subs.pop()  # the subagent's agent, whose session has its name
    cut = blocks(client.conversation(sub_session), "tool_result")
    assert [r["tool_use_id"] for r in cut] == [sub_call]
    assert "interrupt" in json.dumps(cut[0]["content"]).lower()
    assert len(hook_runs(hooked, "stop.log", session)) == 1
