// A client of reprise's write API, the JSON over HTTP that
// `reprise serve --write` serves, on a Unix socket or over TCP.
// api/openapi.json is the contract; src/types.ts holds its types.

import * as http from "node:http";
import * as https from "node:https";

import type {
  Appended,
  Block,
  Compact,
  Conversation,
  CreateSession,
  Deleted,
  Empty,
  End,
  Events,
  ErrorCode,
  Finished,
  Fire,
  Fired,
  Fork,
  Hook,
  HookAdded,
  HookRemoved,
  Message,
  New,
  Prompt,
  PromptResult,
  Restore,
  Resume,
  Saved,
  Session,
  Start,
  Stop,
  StopResult,
  Tool,
  ToolDecision,
  ToolFeedback,
  ToolResult,
  TurnAsk,
  TurnCall,
  TurnInput,
  TurnOutcome,
  TurnResult,
  TurnStep,
  ConversationMessage,
} from "./types.js";

export type * from "./types.js";

/** Where the server listens: a Unix socket, or an http(s) URL with its token. */
export type ClientOptions =
  | {
      /** the path of the socket `serve --write --socket PATH` listens on */
      socket: string;
    }
  | {
      /**
       * the server's address, such as http://127.0.0.1:7777; a ?token=
       * query, as serve prints it, is taken as the token when none is given
       */
      url: string;
      /** the serve token, sent as "Authorization: Bearer TOKEN" */
      token?: string;
    };

/** What every method takes last. */
export interface CallOptions {
  /** aborts the request; the call then rejects with an AbortError */
  signal?: AbortSignal;
}

/** The page of a conversation to read. */
export interface ConversationOptions extends CallOptions {
  /** where the page starts: a next_cursor of the page before */
  cursor?: string;
  /** how many messages the page holds at most */
  limit?: number;
  /** the page's order: oldest first unless "newest" */
  order?: "oldest" | "newest";
}

/** The page of the store's events to read, and which events pass. */
export interface EventsOptions extends ConversationOptions {
  /** only this stream's events: session/ID or agent/NAME */
  stream?: string;
  /** only events of this type (MessageAppended, HookFinished, ...) */
  type?: string;
  /** only events at or after this time: a date (2006-01-02) or an RFC 3339 time */
  since?: string;
  /** only events before this time; a date takes in its whole day */
  until?: string;
}

/**
 * An answer of the server other than 2xx. code, status and busy come
 * from its JSON body; a body that is not the error JSON gives the code
 * "internal", with the HTTP status.
 */
export class RepriseError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly busy?: string;

  constructor(message: string, code: ErrorCode, status: number, busy?: string) {
    super(message);
    this.name = "RepriseError";
    this.code = code;
    this.status = status;
    if (busy !== undefined) this.busy = busy;
  }
}

/** The actions of one agent, each the POST of its body to /api/agents/{name}/{action}. */
export interface Agent {
  readonly name: string;
  /** Startup restore: SessionStart hooks with source startup (resume with resume: true). */
  start(body: Start, options?: CallOptions): Promise<Restore>;
  /** Runtime restore: save, SessionEnd on the current session, load, SessionStart on the target. */
  resume(body: Resume, options?: CallOptions): Promise<Restore>;
  /** A fresh session, the current one ended first. */
  "new"(body: New, options?: CallOptions): Promise<Restore>;
  /** End the current session and start afresh. */
  clear(body?: Empty, options?: CallOptions): Promise<Restore>;
  /** Continue from a copy of a session. */
  fork(body: Fork, options?: CallOptions): Promise<Restore>;
  /** Compact the current session. */
  compact(body: Compact, options?: CallOptions): Promise<Restore>;
  /** End the current session. */
  end(body: End, options?: CallOptions): Promise<Restore>;
  /** The Stop hooks at the end of a turn. */
  stop(body?: Stop, options?: CallOptions): Promise<StopResult>;
  /** Submit the user's prompt through UserPromptSubmit. */
  prompt(body: Prompt, options?: CallOptions): Promise<PromptResult>;
  /** Ask whether a tool call may run: PreToolUse (and PermissionRequest), once. */
  tool(body: Tool, options?: CallOptions): Promise<ToolDecision>;
  /** Record a tool call's result: PostToolUse or PostToolUseFailure, once. */
  toolResult(body: ToolResult, options?: CallOptions): Promise<ToolFeedback>;
  /** Run the hooks of an event without steps of its own, once per fire id. */
  fire(body: Fire, options?: CallOptions): Promise<Fired>;
  /** Roll forward what the agent's log ends inside. */
  finish(body?: Empty, options?: CallOptions): Promise<Finished>;
  /**
   * One step of a durable turn: records what the host did and answers
   * what it is to do next. The host drives the turn, a call per step.
   */
  turn(body: TurnInput, options?: CallOptions): Promise<TurnStep>;
  /**
   * A whole durable turn: the steps of turn, one after the other, each
   * given what the host did for the last, until the turn is over. With a
   * prompt it starts a turn; with undefined it goes on with the turn the
   * agent's log shows unfinished, as a host that died does when it comes
   * back. It rejects when the signal aborts, the model call throws or a
   * step fails; the turn then goes on with runTurn(undefined, ...). The
   * client keeps the agent's conversation between asks, so that each ask
   * is sent only the messages that are new (since).
   */
  runTurn(prompt: string | undefined, options: RunTurnOptions): Promise<TurnRun>;
}

/** What the model call is told besides the messages. */
export interface ModelContext {
  /** the agent whose turn asks, a subagent's within a subagent's turn */
  agent: string;
  /** its current session */
  session: string;
  /** the signal runTurn was given */
  signal?: AbortSignal;
}

/**
 * The host's model call: given the conversation as the model sees it (an
 * ask step's messages), the assistant's answer, as text or content blocks.
 */
export type ModelCall = (messages: ConversationMessage[], context: ModelContext) => Promise<string | Block[]> | string | Block[];

/** What a tool is told besides its call. */
export interface ToolContext {
  /** the agent whose turn gave the call */
  agent: string;
  /** the signal runTurn was given */
  signal?: AbortSignal;
}

/**
 * One of the host's tools: runs a call (already allowed) and answers its
 * output, any JSON value (undefined is sent as null). What it throws is
 * the call's error, given to the model, unless runTurn's signal has
 * aborted: runTurn then rejects with the signal's reason.
 */
export type ToolFunction = (call: TurnCall, context: ToolContext) => Promise<unknown> | unknown;

/** The user's answer to a call left to ask: allowed or not, and what the model is told of a refusal. */
export type AskAnswer = boolean | { allow: boolean; refusal?: string };

/** Asks the user about a call the hooks and the permission left to ask. */
export type AskFunction = (call: TurnAsk, reason: string) => Promise<AskAnswer> | AskAnswer;

/** What runTurn takes besides the prompt. */
export interface RunTurnOptions {
  /** the host's model call */
  model: ModelCall;
  /** the host's tools by name; a call of any other gets the error "No such tool available: NAME" */
  tools: Record<string, ToolFunction>;
  /** the user's answers to calls left to ask; without it, each such call is refused */
  ask?: AskFunction;
  /** what the host's rules say of calls nothing else decides; without it, and without a hook that decides, a call is left to ask */
  permission?: "allow" | "deny" | "ask";
  /** the tools that may run again after a crash cut a call off; another tool's cut-off call gets an interrupted result */
  repeatable?: string[];
  /**
   * run each Agent (Task) call's subagent: its turn is driven by a nested
   * runTurn(undefined, ...) on the call's subagent, with the same model,
   * tools and ask, and its final assistant text is the call's result
   */
  subagents?: boolean;
  /** aborts the turn between steps, or within a model call, tool or request that heeds it */
  signal?: AbortSignal;
}

/** How a turn that runTurn drove came out. */
export interface TurnRun {
  /** the agent */
  agent: string;
  /** the agent's session the turn ran in */
  session: string;
  /** the over step's outcome: blocked, capped or halted, and why */
  outcome: TurnOutcome;
  /** the model calls this runTurn made, its subagents' included */
  modelCalls: number;
  /** the steps it asked for, the over step included */
  steps: number;
}

/**
 * Each operation of the contract, by its operationId: the method and path
 * (with {name} for each path parameter) that the client sends it to.
 */
export const operations = {
  createSession: { method: "POST", path: "/api/sessions" },
  getConversation: { method: "GET", path: "/api/sessions/{session}" },
  deleteSession: { method: "DELETE", path: "/api/sessions/{session}" },
  appendMessage: { method: "POST", path: "/api/sessions/{session}/messages" },
  saveSession: { method: "POST", path: "/api/sessions/{session}/save" },
  addHook: { method: "POST", path: "/api/sessions/{session}/hooks" },
  removeHook: { method: "DELETE", path: "/api/sessions/{session}/hooks/{hook}" },
  startAgent: { method: "POST", path: "/api/agents/{agent}/start" },
  resumeAgent: { method: "POST", path: "/api/agents/{agent}/resume" },
  newSession: { method: "POST", path: "/api/agents/{agent}/new" },
  clearSession: { method: "POST", path: "/api/agents/{agent}/clear" },
  forkSession: { method: "POST", path: "/api/agents/{agent}/fork" },
  compactSession: { method: "POST", path: "/api/agents/{agent}/compact" },
  endSession: { method: "POST", path: "/api/agents/{agent}/end" },
  stopTurn: { method: "POST", path: "/api/agents/{agent}/stop" },
  submitPrompt: { method: "POST", path: "/api/agents/{agent}/prompt" },
  decideTool: { method: "POST", path: "/api/agents/{agent}/tool" },
  recordToolResult: { method: "POST", path: "/api/agents/{agent}/tool-result" },
  fireEvent: { method: "POST", path: "/api/agents/{agent}/fire" },
  finishAgent: { method: "POST", path: "/api/agents/{agent}/finish" },
  turnStep: { method: "POST", path: "/api/agents/{agent}/turn" },
  listEvents: { method: "GET", path: "/api/events" },
  openapi: { method: "GET", path: "/api/openapi.json" },
} as const;

type OperationId = keyof typeof operations;

/** The path of an operation with its parameters filled in, each URL-encoded. */
function pathOf(op: OperationId, params: Record<string, string>): string {
  return operations[op].path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params[name];
    if (typeof value !== "string") throw new TypeError(`${op}: ${name} must be a string`);
    return encodeURIComponent(value);
  });
}

/** Where and how requests go. */
interface Transport {
  module: typeof http | typeof https;
  base: http.RequestOptions;
  headers: http.OutgoingHttpHeaders;
  prefix: string;
}

function transportOf(options: ClientOptions): Transport {
  if (options === null || typeof options !== "object") {
    throw new TypeError("Client takes { socket } or { url, token? }");
  }
  if ("socket" in options) {
    if (typeof options.socket !== "string" || options.socket === "") {
      throw new TypeError("Client: socket must be the path of a Unix socket");
    }
    // The server checks the Host header; a socket's is localhost.
    return { module: http, base: { socketPath: options.socket }, headers: { host: "localhost" }, prefix: "" };
  }
  if (typeof options.url !== "string") throw new TypeError("Client takes { socket } or { url, token? }");
  const url = new URL(options.url);
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`Client: url must be http or https, not ${url.protocol}`);
  }
  const token = options.token ?? url.searchParams.get("token") ?? undefined;
  const headers: http.OutgoingHttpHeaders = {};
  if (token !== undefined && token !== "") headers.authorization = `Bearer ${token}`;
  const base: http.RequestOptions = {
    protocol: url.protocol,
    // An IPv6 address comes bracketed in a URL, bare in a request's options.
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
  };
  if (url.port !== "") base.port = Number(url.port);
  return {
    module: url.protocol === "https:" ? https : http,
    base,
    headers,
    prefix: url.pathname.replace(/\/+$/, ""),
  };
}

/** The error an answer's body describes, or an "internal" one when it describes none. */
function errorOf(status: number, text: string): RepriseError {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (body !== null && typeof body === "object" && !Array.isArray(body)) {
    const { error, code, status: bodyStatus, busy } = body as Record<string, unknown>;
    if (typeof error === "string" && typeof code === "string" && code !== "") {
      return new RepriseError(
        error,
        code as ErrorCode,
        typeof bodyStatus === "number" && Number.isInteger(bodyStatus) ? bodyStatus : status,
        typeof busy === "string" ? busy : undefined,
      );
    }
  }
  const shown = text.trim();
  const snippet = shown.length > 200 ? `${shown.slice(0, 200)}...` : shown;
  return new RepriseError(`HTTP ${status}${snippet === "" ? "" : `: ${snippet}`}`, "internal", status);
}

/** Throws the signal's reason once it has aborted. */
function abortIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** A client of one reprise server. */
export class Client {
  readonly #transport: Transport;
  /** each agent's conversation as its last ask gave it, for runTurn's since */
  readonly #kept = new Map<string, { after: string; messages: ConversationMessage[] }>();

  constructor(options: ClientOptions) {
    this.#transport = transportOf(options);
  }

  /** Create a session (201). */
  createSession(body: CreateSession, options?: CallOptions): Promise<Session> {
    return this.#call("createSession", {}, body, options);
  }

  /** Delete a session, and its subagents' sessions. */
  deleteSession(id: string, options?: CallOptions): Promise<Deleted> {
    return this.#call("deleteSession", { session: id }, undefined, options);
  }

  /** Append a message, or buffer it (buffer: true). */
  append(session: string, message: Message, options?: CallOptions): Promise<Appended> {
    return this.#call("appendMessage", { session }, message, options);
  }

  /** Write the session's buffered messages. */
  save(session: string, options?: CallOptions): Promise<Saved> {
    return this.#call("saveSession", { session }, undefined, options);
  }

  /** Add hooks to the session alone; their ids come back in order. */
  addHooks(session: string, hooks: Hook, options?: CallOptions): Promise<HookAdded> {
    return this.#call("addHook", { session }, hooks, options);
  }

  /** Remove a session-scoped hook by its id. */
  removeHook(session: string, id: string, options?: CallOptions): Promise<HookRemoved> {
    return this.#call("removeHook", { session, hook: id }, undefined, options);
  }

  /** Read a page of the session's conversation. */
  conversation(session: string, options: ConversationOptions = {}): Promise<Conversation> {
    const query = new URLSearchParams();
    if (options.cursor !== undefined) query.set("cursor", options.cursor);
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.order !== undefined) query.set("order", options.order);
    return this.#call("getConversation", { session }, undefined, options, query);
  }

  /** Read a page of the store's events, those that pass the options' filters. */
  events(options: EventsOptions = {}): Promise<Events> {
    const query = new URLSearchParams();
    for (const name of ["cursor", "order", "stream", "type", "since", "until"] as const) {
      const value = options[name];
      if (value !== undefined) query.set(name, value);
    }
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    return this.#call("listEvents", {}, undefined, options, query);
  }

  /** The contract the server serves, api/openapi.json. */
  openapi(options?: CallOptions): Promise<unknown> {
    return this.#call("openapi", {}, undefined, options);
  }

  /** The actions of the agent called name. */
  agent(name: string): Agent {
    const post = <T>(op: OperationId, body: unknown, options?: CallOptions): Promise<T> =>
      this.#call<T>(op, { agent: name }, body, options);
    return {
      name,
      start: (body, options) => post("startAgent", body, options),
      resume: (body, options) => post("resumeAgent", body, options),
      new: (body, options) => post("newSession", body, options),
      clear: (body = {}, options) => post("clearSession", body, options),
      fork: (body, options) => post("forkSession", body, options),
      compact: (body, options) => post("compactSession", body, options),
      end: (body, options) => post("endSession", body, options),
      stop: (body = {}, options) => post("stopTurn", body, options),
      prompt: (body, options) => post("submitPrompt", body, options),
      tool: (body, options) => post("decideTool", body, options),
      toolResult: (body, options) => post("recordToolResult", body, options),
      fire: (body, options) => post("fireEvent", body, options),
      finish: (body = {}, options) => post("finishAgent", body, options),
      turn: (body, options) => post("turnStep", body, options),
      runTurn: (prompt, options) => this.#runTurn(name, prompt, options),
    };
  }

  /** Drives the turn of the agent called name, step after step, until it is over. */
  async #runTurn(name: string, prompt: string | undefined, options: RunTurnOptions): Promise<TurnRun> {
    if (options === null || typeof options !== "object" || typeof options.model !== "function") {
      throw new TypeError("runTurn takes { model, tools, ... }");
    }
    if (options.tools === null || typeof options.tools !== "object") throw new TypeError("runTurn: tools must map names to functions");
    const { signal } = options;
    const call: CallOptions = signal === undefined ? {} : { signal };
    const agent = this.agent(name);
    const base: TurnInput = {};
    if (options.permission !== undefined) base.permission = options.permission;
    if (options.repeatable !== undefined) base.repeatable = options.repeatable;
    if (options.subagents) base.subagents = true;
    let input: TurnInput = prompt === undefined ? { ...base } : { ...base, prompt };
    let modelCalls = 0;
    let steps = 0;
    for (;;) {
      abortIfAborted(signal);
      const kept = this.#kept.get(name);
      if (kept !== undefined) input.since = kept.after;
      const step = await agent.turn(input, call);
      steps++;
      input = { ...base };
      if (step.step === "over") {
        const outcome = step.outcome ?? { resumed: false, blocked: false, capped: false, halted: false };
        return { agent: step.agent, session: step.session, outcome, modelCalls, steps };
      }
      if (step.step === "ask") {
        if (step.after === undefined) throw new RepriseError("an ask step without after", "internal", 200);
        const context: ModelContext = { agent: step.agent, session: step.session };
        if (signal !== undefined) context.signal = signal;
        let messages = step.messages ?? [];
        if (step.since !== undefined) {
          if (kept === undefined || step.since !== kept.after) throw new RepriseError(`an ask since ${step.since}, which this client was not given`, "internal", 200);
          messages = kept.messages.concat(messages);
        }
        this.#kept.set(name, { after: step.after, messages });
        modelCalls++;
        const content = await options.model(messages.slice(), context);
        abortIfAborted(signal);
        input.answer = { role: "assistant", content };
        input.after = step.after;
        continue;
      }
      if (step.step !== "tools") throw new RepriseError(`a turn step of an unknown kind: ${String(step.step)}`, "internal", 200);
      // All the calls of one step run at once; their results go together in the next.
      const ran = await Promise.all(
        (step.calls ?? []).map(async (c): Promise<TurnResult> => {
          if (c.subagent !== undefined && options.subagents) {
            const sub = await this.#runTurn(c.subagent, undefined, options);
            modelCalls += sub.modelCalls;
            return { tool_use_id: c.tool_use_id, output: await this.#finalText(sub.session, call) };
          }
          return this.#runTool(step.agent, c, options);
        }),
      );
      abortIfAborted(signal);
      const answers = [];
      for (const a of step.asks ?? []) {
        const answer = options.ask === undefined ? false : await options.ask(a, a.reason);
        abortIfAborted(signal);
        if (typeof answer === "boolean") {
          answers.push({ tool_use_id: a.tool_use_id, allow: answer });
        } else {
          const given: { tool_use_id: string; allow: boolean; refusal?: string } = { tool_use_id: a.tool_use_id, allow: answer.allow === true };
          if (answer.refusal !== undefined) given.refusal = answer.refusal;
          answers.push(given);
        }
      }
      if (ran.length > 0) input.results = ran;
      if (answers.length > 0) input.answers = answers;
    }
  }

  /** Runs one call with the host's tool of its name; what it throws is the call's error. */
  async #runTool(agent: string, c: TurnCall, options: RunTurnOptions): Promise<TurnResult> {
    const tool = Object.prototype.hasOwnProperty.call(options.tools, c.name) ? options.tools[c.name] : undefined;
    if (typeof tool !== "function") return { tool_use_id: c.tool_use_id, error: `No such tool available: ${c.name}` };
    const context: ToolContext = { agent };
    if (options.signal !== undefined) context.signal = options.signal;
    try {
      const output = await tool(c, context);
      return { tool_use_id: c.tool_use_id, output: output === undefined ? null : output };
    } catch (err) {
      abortIfAborted(options.signal);
      return { tool_use_id: c.tool_use_id, error: err instanceof Error ? err.message : String(err) };
    }
  }

  /** The text of the session's last assistant message that has any: a subagent's final answer. */
  async #finalText(session: string, options: CallOptions): Promise<string> {
    let text = "";
    let cursor: string | undefined;
    do {
      const page: ConversationOptions = { ...options };
      if (cursor !== undefined) page.cursor = cursor;
      const conv = await this.conversation(session, page);
      for (const m of conv.messages) {
        if (m.role !== "assistant" || m.meta) continue;
        const t = m.content
          .filter((b) => b.type === "text" && typeof b.text === "string")
          .map((b) => b.text as string)
          .join("");
        if (t !== "") text = t;
      }
      cursor = conv.next_cursor === "" ? undefined : conv.next_cursor;
    } while (cursor !== undefined);
    return text;
  }

  /** Sends one request and reads its JSON answer. */
  #call<T>(
    op: OperationId,
    params: Record<string, string>,
    body: unknown,
    options: CallOptions = {},
    query?: URLSearchParams,
  ): Promise<T> {
    const { method } = operations[op];
    const { module, base, prefix } = this.#transport;
    let path: string;
    try {
      path = prefix + pathOf(op, params);
    } catch (err) {
      return Promise.reject(err);
    }
    const search = query?.toString();
    if (search) path += `?${search}`;
    const payload = body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(body));
    const headers: http.OutgoingHttpHeaders = { ...this.#transport.headers, accept: "application/json" };
    if (payload !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = payload.length;
    }
    const request: http.RequestOptions = { ...base, method, path, headers };
    if (options.signal !== undefined) request.signal = options.signal;
    return new Promise<T>((resolve, reject) => {
      const req = module.request(request, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => {
          text += chunk;
        });
        res.on("error", reject);
        res.on("close", () => {
          if (!res.complete) {
            reject(new RepriseError("the connection closed before the whole answer came", "internal", res.statusCode ?? 0));
          }
        });
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            reject(errorOf(status, text));
            return;
          }
          try {
            resolve(JSON.parse(text) as T);
          } catch {
            reject(new RepriseError(`HTTP ${status} with a body that is not JSON`, "internal", status));
          }
        });
      });
      req.on("error", reject);
      req.end(payload);
    });
  }
}
