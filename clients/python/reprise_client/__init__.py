"""A client of the reprise write API, the one ``reprise serve --write`` serves.

Open a client on the server's Unix socket, or on its TCP address with the
serve token::

    from reprise_client import Client, RepriseError

    client = Client(socket="/run/user/1000/reprise.sock")
    session = client.create_session("/src/app")
    ide = client.agent("ide")
    restore = ide.start(session["id"])
    print(restore["context"])

Every method sends one request and returns the JSON object the server
answers, typed with the TypedDicts of :mod:`reprise_client.types`, which
``scripts/gen_types.py`` writes from ``api/openapi.json``. An answer that
is not a success raises :class:`RepriseError`, whose ``code`` says which
condition it was. A request that never got an answer raises what the
socket raised: an :class:`OSError` (:class:`TimeoutError` when the
timeout passed).

:meth:`Agent.run_turn` is the one method that sends more than one request:
it drives a durable turn to its end with the host's model and tools, a step
of ``POST /api/agents/{agent}/turn`` (:meth:`Agent.turn`) at a time::

    outcome = ide.run_turn("list the files", model=ask_the_model,
                           tools={"Bash": run_bash}, permission="allow")

A client opens one connection per request and keeps no other state, so one
client may be shared between threads.
"""

from __future__ import annotations

import http.client
import json
import socket as _socket
import urllib.parse
from typing import Any, Callable, Iterable, Iterator, Mapping, Union, Unpack, cast

from .types import (
    Appended,
    Block,
    CompactTrigger,
    Conversation,
    ConversationMessage,
    Deleted,
    ErrorCode,
    Events,
    Finished,
    Fired,
    HookAdded,
    HookRemoved,
    MessageRole,
    PromptResult,
    Restore,
    Saved,
    Session,
    StopResult,
    ToolAnswer,
    ToolDecision,
    ToolFeedback,
    ToolPermission,
    TurnAnswer,
    TurnAsk,
    TurnCall,
    TurnInput,
    TurnInputPermission,
    TurnOutcome,
    TurnResult,
    TurnStep,
)

__all__ = [
    "Agent",
    "Client",
    "ModelCall",
    "RepriseError",
    "ToolAsk",
    "ToolRun",
    "TurnAborted",
    "UnixHTTPConnection",
]

__version__ = "0.1.0"

USER_AGENT = f"reprise-client-python/{__version__}"

# The largest error body quoted in a RepriseError made from an answer that
# is not the API's error object.
_QUOTE_LIMIT = 200


class RepriseError(Exception):
    """An answer of the server that is not a success.

    ``code`` is one of the API's error codes (:data:`reprise_client.types.ErrorCode`),
    ``status`` the HTTP status, ``message`` what went wrong in words and
    ``busy``, with ``agent_busy``, the action that holds the agent when the
    server knows it. An answer whose body is not the API's error object is
    raised with code ``internal`` and the HTTP status.
    """

    code: ErrorCode | str
    status: int
    message: str
    busy: str | None

    def __init__(self, code: ErrorCode | str, status: int, message: str, busy: str | None = None):
        super().__init__(code, status, message, busy)
        self.code = code
        self.status = status
        self.message = message
        self.busy = busy

    def __str__(self) -> str:
        text = f"{self.code} ({self.status}): {self.message}"
        if self.busy:
            text += f" (busy: {self.busy})"
        return text

    def __repr__(self) -> str:
        return f"RepriseError(code={self.code!r}, status={self.status!r}, message={self.message!r}, busy={self.busy!r})"

    @classmethod
    def from_response(cls, status: int, body: bytes) -> RepriseError:
        """The error an answer of HTTP status with body stands for."""
        try:
            obj = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            obj = None
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("code"), str)
            and obj["code"]
            and isinstance(obj.get("error"), str)
        ):
            body_status = obj.get("status")
            if not isinstance(body_status, int) or isinstance(body_status, bool):
                body_status = status
            busy = obj.get("busy")
            return cls(obj["code"], body_status, obj["error"], busy if isinstance(busy, str) else None)
        if isinstance(obj, dict) and isinstance(obj.get("error"), str) and obj["error"]:
            # An error object without its code: the words are kept.
            return cls("internal", status, obj["error"])
        text = body.decode("utf-8", "replace").strip()
        if len(text) > _QUOTE_LIMIT:
            text = text[:_QUOTE_LIMIT] + "..."
        reason = http.client.responses.get(status, "")
        message = f"HTTP {status} {reason}".rstrip()
        if text:
            message += f": {text}"
        else:
            message += " without a body"
        return cls("internal", status, message)


class TurnAborted(Exception):
    """Raised by a tool (or the model) of :meth:`Agent.run_turn` to stop the turn where it stands.

    It is not a tool's failure: it goes through ``run_turn`` to its caller
    and nothing of the call it cut off is recorded, as if the host had died
    there. A later ``run_turn()`` without a prompt goes on with the turn:
    the cut-off call's result then says it was interrupted (or, for a
    ``repeatable`` tool, the call is given again).
    """


# The host's model: the messages of an ask step in, the assistant's content
# (its text, or its content blocks) out.
ModelCall = Callable[[list[ConversationMessage]], Union[str, list[Block], list[dict[str, Any]]]]
# A tool of the host's: a call to run in, its output (any JSON value) out.
ToolRun = Callable[[TurnCall], Any]
# The user's answer to a call left to ask, with the hooks' reason: True to
# run it, False to refuse it, or a refusal's words for the model.
ToolAsk = Callable[[TurnAsk, str], Union[bool, str]]


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection over a Unix socket, for ``serve --write --socket PATH``.

    The Host header says ``localhost``, a loopback name the server accepts.
    """

    def __init__(self, path: str, timeout: float | None = None):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _segment(value: str) -> str:
    """value as one path segment: every reserved character escaped, / too."""
    if not isinstance(value, str):
        raise TypeError(f"a path segment must be a str, not {type(value).__name__}")
    return urllib.parse.quote(value, safe="")


class _Unset:
    """The default of an argument whose None is a value to send (JSON null)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Any = _Unset()


def _body(**fields: Any) -> dict[str, Any]:
    """A request body of the fields given: None (or UNSET) leaves a key out."""
    return {k: v for k, v in fields.items() if v is not None and v is not UNSET}


class Client:
    """A client of ``reprise serve --write``.

    Give ``socket``, the path of the server's Unix socket (no token: the
    socket's mode keeps others out), or ``url``, its address over TCP
    (``http://127.0.0.1:7777``) with ``token``, sent as
    ``Authorization: Bearer TOKEN``. The address ``serve`` prints, with its
    ``?token=`` query, may be given as it is: the token is taken from it
    (and sent as the header, never in the address) unless ``token`` says
    otherwise. ``timeout`` is how many seconds to wait for the socket, to
    connect and then for each read; None, the default, waits as long as the
    server takes, since an agent action runs hooks that may take minutes.
    """

    def __init__(
        self,
        *,
        socket: str | None = None,
        url: str | None = None,
        token: str | None = None,
        timeout: float | None = None,
    ):
        if (socket is None) == (url is None):
            raise ValueError("give socket (a Unix socket's path) or url (http://HOST:PORT), one of them")
        self.timeout = timeout
        self.socket = socket
        # Each agent's conversation as its last ask gave it: run_turn sends
        # its last message's uuid as since and is given only what is new.
        self._kept: dict[str, tuple[str, list[ConversationMessage]]] = {}
        self.url: str | None = None
        self._host = ""
        self._port: int | None = None
        self._https = False
        self._prefix = ""
        if socket is not None:
            if token is not None:
                raise ValueError("a Unix socket takes no token")
            self.token: str | None = None
            return
        assert url is not None
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"url {url!r}: give an http:// address, such as http://127.0.0.1:7777")
        if not parts.hostname:
            raise ValueError(f"url {url!r} names no host")
        if parts.fragment:
            raise ValueError(f"url {url!r}: an address takes no #fragment")
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        if token is None and query.get("token"):
            token = query["token"][0]
        self.token = token or None
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        self.url = urllib.parse.urlunsplit((parts.scheme, netloc, self._prefix, "", ""))

    def __repr__(self) -> str:
        where = f"socket={self.socket!r}" if self.socket is not None else f"url={self.url!r}"
        return f"Client({where})"

    # The one way requests are sent.

    def _connection(self) -> http.client.HTTPConnection:
        if self.socket is not None:
            return UnixHTTPConnection(self.socket, timeout=self.timeout)
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def request(
        self,
        method: str,
        path: str,
        body: Any = UNSET,
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        """Send one request and return the answer's JSON.

        ``path`` starts with ``/api/`` and has its segments quoted already;
        ``body``, when given and not None, is sent as JSON (bytes as they
        are);
        ``query`` items whose value is None are left out. A status outside
        200-299 raises :class:`RepriseError`, as does a success whose body is
        not JSON (code ``internal``). This is what every other method uses;
        it is public for what they do not cover.
        """
        target = self._prefix + path
        if query:
            items = [(k, str(v)) for k, v in query.items() if v is not None]
            if items:
                target += "?" + urllib.parse.urlencode(items)
        headers = {
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
        }
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data: bytes | None = None
        if body is not UNSET and body is not None:
            if isinstance(body, (bytes, bytearray)):
                data = bytes(body)
            else:
                data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = self._connection()
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            status = resp.status
            raw = resp.read()
        finally:
            conn.close()
        if not 200 <= status < 300:
            raise RepriseError.from_response(status, raw)
        if not raw.strip():
            return None
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise RepriseError("internal", status, f"the answer to {method} {path} is not JSON: {e}") from None

    # Sessions.

    def create_session(self, cwd: str, id: str | None = None) -> Session:
        """Create an empty session working in cwd (an absolute path); its id is a new UUID unless id gives one."""
        return cast(Session, self.request("POST", "/api/sessions", _body(id=id, cwd=cwd)))

    def delete_session(self, id: str) -> Deleted:
        """Delete a session, and its subagents' sessions."""
        return cast(Deleted, self.request("DELETE", f"/api/sessions/{_segment(id)}"))

    def append(
        self,
        session: str,
        role: MessageRole,
        content: str | list[Block] | list[dict[str, Any]],
        meta: bool = False,
        buffer: bool = False,
    ) -> Appended:
        """Append a message to session: content is its text or its content blocks.

        ``meta`` marks a message the model sees but the user did not type;
        ``buffer`` keeps it in memory until the session's next save or
        lifecycle step instead of appending it durably.
        """
        body = _body(role=role, content=content, meta=meta or None, buffer=buffer or None)
        return cast(Appended, self.request("POST", f"/api/sessions/{_segment(session)}/messages", body))

    def save(self, session: str) -> Saved:
        """Write the session's buffered messages."""
        return cast(Saved, self.request("POST", f"/api/sessions/{_segment(session)}/save"))

    def add_hooks(self, session: str, hooks: Mapping[str, list[dict[str, Any]]]) -> HookAdded:
        """Add hooks to session alone, until it ends.

        ``hooks`` is a settings file's ``hooks`` object: each event's matcher
        groups, each with its hooks. The answer's ``ids`` name the hooks
        added, in the order given, for :meth:`remove_hook`.
        """
        return cast(
            HookAdded,
            self.request("POST", f"/api/sessions/{_segment(session)}/hooks", {"hooks": dict(hooks)}),
        )

    def remove_hook(self, session: str, hook_id: str) -> HookRemoved:
        """Remove a hook add_hooks added to session."""
        return cast(
            HookRemoved,
            self.request("DELETE", f"/api/sessions/{_segment(session)}/hooks/{_segment(hook_id)}"),
        )

    def conversation(
        self, session: str, cursor: str | None = None, limit: int | None = None, order: str | None = None
    ) -> Conversation:
        """A page of the session's conversation: its messages from cursor on, limit of them (the server's default unless given), oldest first unless order is "newest"."""
        return cast(
            Conversation,
            self.request(
                "GET", f"/api/sessions/{_segment(session)}", query={"cursor": cursor, "limit": limit, "order": order}
            ),
        )

    def events(
        self,
        stream: str | None = None,
        type: str | None = None,
        since: str | None = None,
        until: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
        order: str | None = None,
    ) -> Events:
        """A page of the store's events, those of stream (session/ID or agent/NAME) and type, at or after since and before until (a date, 2006-01-02, or an RFC 3339 time; an until date takes in its whole day); paged as conversation is."""
        query = {"stream": stream, "type": type, "since": since, "until": until, "cursor": cursor, "limit": limit, "order": order}
        return cast(Events, self.request("GET", "/api/events", query=query))

    def messages(self, session: str, limit: int | None = None) -> Iterator[ConversationMessage]:
        """Every message of the session's conversation, page after page (limit a page)."""
        cursor: str | None = None
        while True:
            page = self.conversation(session, cursor=cursor, limit=limit)
            yield from page.get("messages") or []
            cursor = page.get("next_cursor") or None
            if cursor is None:
                return

    def openapi(self) -> dict[str, Any]:
        """The API's OpenAPI document, as the server serves it."""
        return cast("dict[str, Any]", self.request("GET", "/api/openapi.json"))

    # Agents.

    def agent(self, name: str) -> Agent:
        """The agent named name: its actions are methods of the object returned."""
        return Agent(self, name)


class Agent:
    """The actions of one agent; each POSTs its body to ``/api/agents/{name}/{action}``.

    Each method's arguments are the body's keys; an optional one left as
    None is not sent, so the server's default holds.
    """

    def __init__(self, client: Client, name: str):
        self.client = client
        self.name = name

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, {self.client!r})"

    def _post(self, action: str, body: dict[str, Any]) -> Any:
        return self.client.request("POST", f"/api/agents/{_segment(self.name)}/{action}", body)

    def start(self, session: str, *, prompt: str | None = None, resume: bool = False) -> Restore:
        """The startup restore: session becomes current and its SessionStart hooks run (source startup, or resume with resume)."""
        return cast(Restore, self._post("start", _body(session=session, prompt=prompt, resume=resume or None)))

    def resume(self, session: str) -> Restore:
        """The runtime restore: save and end the current session, then load session and run its SessionStart hooks."""
        return cast(Restore, self._post("resume", _body(session=session)))

    def new(self, cwd: str, *, id: str | None = None, prompt: str | None = None) -> Restore:
        """A fresh session working in cwd, the current one ended first."""
        return cast(Restore, self._post("new", _body(id=id, cwd=cwd, prompt=prompt)))

    def clear(self) -> Restore:
        """End the current session and start afresh."""
        return cast(Restore, self._post("clear", {}))

    def fork(self, parent: str, *, at: str | None = None) -> Restore:
        """Continue from a copy of parent, up to the message at (default its last)."""
        return cast(Restore, self._post("fork", _body(parent=parent, at=at)))

    def compact(
        self,
        summary: str,
        *,
        instructions: str | None = None,
        trigger: CompactTrigger | None = None,
    ) -> Restore:
        """Compact the current session: the compacted one starts from summary."""
        return cast(
            Restore,
            self._post("compact", _body(summary=summary, instructions=instructions, trigger=trigger)),
        )

    def end(self, reason: str, *, final_message: str | None = None, error: str | None = None) -> Restore:
        """End the current session for reason (clear, logout, prompt_input_exit, other, ...)."""
        return cast(
            Restore,
            self._post("end", _body(reason=reason, final_message=final_message, error=error)),
        )

    def stop(self, reason: str | None = None) -> StopResult:
        """Run the Stop hooks at the end of a turn; reason is why it ended (end_turn, ...)."""
        return cast(StopResult, self._post("stop", _body(reason=reason)))

    def prompt(self, text: str) -> PromptResult:
        """Submit the user's prompt through the UserPromptSubmit hooks."""
        return cast(PromptResult, self._post("prompt", _body(text=text)))

    def tool(
        self,
        tool_use_id: str,
        *,
        name: str | None = None,
        input: Mapping[str, Any] | None = None,
        permission: ToolPermission | None = None,
        add_tool_use: bool = False,
        answer: ToolAnswer | None = None,
        refusal: str | None = None,
        feedback: str | None = None,
    ) -> ToolDecision:
        """Ask whether tool call tool_use_id may run: its PreToolUse (and PermissionRequest) hooks, once.

        Give ``name`` and ``input`` for the question; ``permission`` is what
        the host's own rules say; ``add_tool_use`` records the call's tool_use
        when no answer of the session holds it. For a call left to ask, give
        ``answer`` (with ``refusal`` or ``feedback`` for a refusal) instead.
        """
        body = _body(
            tool_use_id=tool_use_id,
            name=name,
            input=dict(input) if input is not None else None,
            permission=permission,
            add_tool_use=add_tool_use or None,
            answer=answer,
            refusal=refusal,
            feedback=feedback,
        )
        return cast(ToolDecision, self._post("tool", body))

    def tool_result(self, tool_use_id: str, *, output: Any = UNSET, error: str | None = None) -> ToolFeedback:
        """Record what the call gave: output (any JSON value, None for null) or error, its failure; then its PostToolUse (or PostToolUseFailure) hooks run."""
        body: dict[str, Any] = {"tool_use_id": tool_use_id}
        if output is not UNSET:
            body["output"] = output
        if error is not None:
            body["error"] = error
        return cast(ToolFeedback, self._post("tool-result", body))

    def fire(self, event: str, id: str, *, fields: Mapping[str, Any] | None = None) -> Fired:
        """Run the hooks of event, once per fire id."""
        return cast(
            Fired,
            self._post("fire", _body(event=event, id=id, fields=dict(fields) if fields is not None else None)),
        )

    def finish(self) -> Finished:
        """Roll forward what the agent's log ends inside."""
        return cast(Finished, self._post("finish", {}))

    def turn(self, **body: Unpack[TurnInput]) -> TurnStep:
        """One step of a durable turn: record what the host did since the last step, and get what it is to do next.

        The keywords are the body's (:class:`reprise_client.types.TurnInput`):
        ``prompt`` to start a turn, or ``answer`` with ``after``, ``results``
        and ``answers``; ``permission``, ``repeatable`` and ``subagents`` on
        every step, and ``since``, the ``after`` of an earlier ask whose
        messages the host keeps, to be given only the messages after it. Nothing at all goes on with the turn the log shows.
        :meth:`run_turn` is the loop of these steps.
        """
        return cast(TurnStep, self._post("turn", dict(body)))

    def run_turn(
        self,
        prompt: str | None = None,
        *,
        model: ModelCall,
        tools: Mapping[str, ToolRun],
        ask: ToolAsk | None = None,
        permission: TurnInputPermission | None = None,
        repeatable: Iterable[str] = (),
        subagents: bool = False,
    ) -> TurnOutcome:
        """Drive one turn to its end, step after step, with the host's model and tools.

        ``prompt`` starts the turn; without it, the turn the log shows
        unfinished goes on (a host that died calls ``run_turn()`` again).
        Each ``ask`` step calls ``model(messages)`` and gives its answer;
        each ``tools`` step runs every call with ``tools[name](call)``, whose
        return value is the call's output and whose ``Exception`` is its
        error (its message); a tool not in ``tools`` gets the error
        ``No such tool available: NAME``. Calls left to ask go to
        ``ask(call, reason)``: True runs the call, False refuses it, a
        string refuses it with those words; without ``ask`` they are
        refused. Every result and answer of one step goes in the next.

        :class:`TurnAborted`, and what is not an ``Exception``
        (``KeyboardInterrupt``, ``SystemExit``), go through to the caller,
        as does anything the model or the server raised: the log keeps the
        turn where it stood, for a later ``run_turn()``.

        With ``subagents``, an Agent (Task) call the server gave with its
        ``subagent`` is run by driving that agent's turn with the same
        model, tools and answers, and the subagent's final text is the
        call's result.

        The client keeps each agent's conversation between asks, so that
        an ask is sent only the messages that are new (``since``); ``model``
        is given the whole conversation all the same.

        Returns the turn's outcome, with ``requests`` the number of times
        this call asked the model (nested subagents' turns included): the
        server's own count is of the last step alone.
        """
        rules: TurnInput = {}
        if permission is not None:
            rules["permission"] = permission
        names = list(repeatable)
        if names:
            rules["repeatable"] = names
        if subagents:
            rules["subagents"] = True
        body = rules.copy()
        if prompt is not None:
            body["prompt"] = prompt
        requests = 0
        while True:
            kept = self.client._kept.get(self.name)
            if kept is not None:
                body["since"] = kept[0]
            step = self.turn(**body)
            body = rules.copy()
            kind = step["step"]
            if kind == "over":
                outcome = cast(TurnOutcome, dict(step.get("outcome") or {}))
                outcome["requests"] = requests
                return outcome
            if kind == "ask":
                messages = list(step.get("messages") or [])
                since = step.get("since")
                if since is not None:
                    if kept is None or since != kept[0]:
                        raise RepriseError("internal", 200, f"an ask since {since}, which this client was not given")
                    messages = kept[1] + messages
                self.client._kept[self.name] = (step.get("after", ""), messages)
                requests += 1
                content = model(list(messages))
                body["answer"] = {"content": cast("str | list[Block]", content)}
                body["after"] = step.get("after", "")
                continue
            if kind != "tools":
                raise RepriseError("internal", 200, f"the turn step {kind!r} is not one of ask, tools and over")
            results: list[TurnResult] = []
            for call in step.get("calls") or []:
                child = call.get("subagent")
                if subagents and child:
                    sub = self.client.agent(child)
                    out = sub.run_turn(
                        model=model, tools=tools, ask=ask, permission=permission, repeatable=names, subagents=True
                    )
                    requests += out.get("requests", 0)
                    results.append({"tool_use_id": call["tool_use_id"], "output": _final_text(self.client, child)})
                    continue
                results.append(_run_call(tools, call))
            answers: list[TurnAnswer] = []
            for pending in step.get("asks") or []:
                answers.append(_answer(ask, pending))
            if results:
                body["results"] = results
            if answers:
                body["answers"] = answers


def _final_text(client: Client, session: str) -> str:
    """The text of the session's last assistant message that has any: a subagent's final answer."""
    last = ""
    for message in client.messages(session):
        if message["role"] != "assistant":
            continue
        text = "".join(str(b.get("text", "")) for b in message["content"] if b.get("type") == "text")
        if text:
            last = text
    return last


def _run_call(tools: Mapping[str, ToolRun], call: TurnCall) -> TurnResult:
    """The result of running call with the tool of its name."""
    run = tools.get(call["name"])
    if run is None:
        return {"tool_use_id": call["tool_use_id"], "error": f"No such tool available: {call['name']}"}
    try:
        output = run(call)
    except TurnAborted:
        raise
    except Exception as e:
        return {"tool_use_id": call["tool_use_id"], "error": str(e) or type(e).__name__}
    return {"tool_use_id": call["tool_use_id"], "output": output}


def _answer(ask: ToolAsk | None, pending: TurnAsk) -> TurnAnswer:
    """The user's answer to a call left to ask: ask's, or a refusal without it."""
    if ask is None:
        return {"tool_use_id": pending["tool_use_id"], "allow": False}
    said = ask(pending, pending["reason"])
    if isinstance(said, str):
        return {"tool_use_id": pending["tool_use_id"], "allow": False, "refusal": said}
    return {"tool_use_id": pending["tool_use_id"], "allow": bool(said)}
