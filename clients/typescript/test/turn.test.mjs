// Whole durable turns driven by runTurn against a real serve --write whose
// PreToolUse and Stop hooks write a line per run (the session's id) to
// files of the test's temp dir, so that the runs can be counted.

import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client } from "../dist/index.js";
import { binary, startServer, tempDir } from "../testkit/server.mjs";

let build, logs, server, client, cwd;

/** A hook command that writes the session id of its input, a line, to file. */
function countingHook(file) {
  return `grep -o '"session_id": *"[^"]*"' >> '${file}'`;
}

before(async () => {
  build = tempDir();
  logs = tempDir("reprise-hooks-");
  const settings = {
    hooks: {
      PreToolUse: [{ matcher: "*", hooks: [{ type: "command", command: countingHook(join(logs, "pre")) }] }],
      Stop: [{ hooks: [{ type: "command", command: countingHook(join(logs, "stop")) }] }],
    },
  };
  server = await startServer({ bin: binary(build), settings });
  client = new Client({ socket: server.socket });
  cwd = join(server.dir, "work");
  mkdirSync(cwd);
});

after(async () => {
  await server?.stop();
  for (const d of [build, logs]) if (d) rmSync(d, { recursive: true, force: true });
});

/** How many times the hook of kind (pre, stop) ran in session. */
function runs(kind, session) {
  let text = "";
  try {
    text = readFileSync(join(logs, kind), "utf8");
  } catch {
    return 0;
  }
  return text.split("\n").filter((l) => l.includes(`"${session}"`)).length;
}

/** A session with an agent started on it. */
async function started(session) {
  await client.createSession({ id: session, cwd });
  const agent = client.agent(`agent-${session}`);
  await agent.start({ session });
  return agent;
}

/**
 * A model that answers each call with the next of answers and keeps the
 * messages it was given.
 */
function scripted(...answers) {
  const model = async (messages) => {
    model.seen.push(messages);
    const next = answers[model.seen.length - 1];
    if (next === undefined) throw new Error(`the model was asked ${model.seen.length} times`);
    return next;
  };
  model.seen = [];
  return model;
}

function bashCall(id, command) {
  return [{ type: "tool_use", id, name: "Bash", input: { command } }];
}

/** The session's content blocks of a type, in order. */
async function blocks(session, type) {
  const { messages } = await client.conversation(session);
  return messages.flatMap((m) => m.content.filter((b) => b.type === type).map((b) => ({ role: m.role, ...b })));
}

/** The text of a tool_result block's content. */
function resultText(block) {
  if (typeof block.content === "string") return block.content;
  return (block.content ?? []).map((c) => c.text ?? "").join("");
}

test("a whole turn: a tool call, run, then the final text", async () => {
  const agent = await started("whole");
  const model = scripted(bashCall("toolu_w1", "ls"), "Two files: a.txt and b.txt.");
  const ran = [];
  const run = await agent.runTurn("list the files", {
    model,
    permission: "allow",
    tools: {
      Bash: async (call) => {
        ran.push(call.input.command);
        return "a.txt\nb.txt";
      },
    },
  });
  assert.equal(run.session, "whole");
  assert.equal(run.modelCalls, 2);
  assert.equal(run.steps, 4); // ask, tools, ask, over
  assert.equal(run.outcome.blocked, false);
  assert.equal(run.outcome.halted, false);
  assert.deepEqual(ran, ["ls"]);
  // The second ask shows the model its call's result.
  const shown = model.seen[1].flatMap((m) => m.content).find((b) => b.type === "tool_result");
  assert.equal(shown.tool_use_id, "toolu_w1");
  assert.match(resultText(shown), /a\.txt\nb\.txt/);

  const uses = await blocks("whole", "tool_use");
  assert.deepEqual(uses.map((b) => [b.role, b.id, b.name]), [["assistant", "toolu_w1", "Bash"]]);
  const results = await blocks("whole", "tool_result");
  assert.equal(results.length, 1);
  assert.equal(results[0].tool_use_id, "toolu_w1");
  assert.match(resultText(results[0]), /a\.txt\nb\.txt/);
  const texts = (await blocks("whole", "text")).filter((b) => b.role === "assistant");
  assert.equal(texts.at(-1).text, "Two files: a.txt and b.txt.");
  assert.equal(runs("pre", "whole"), 1);
  assert.equal(runs("stop", "whole"), 1);
});

/**
 * A proxy on a socket of its own in front of the server's, which keeps
 * the body of every turn step it passes on.
 */
async function recordingProxy() {
  const bodies = [];
  const proxy = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      if (req.url.endsWith("/turn")) bodies.push(JSON.parse(body.toString("utf8")));
      const out = http.request({ socketPath: server.socket, path: req.url, method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      });
      out.end(body);
    });
  });
  const socket = join(logs, "proxy.sock");
  await new Promise((done) => proxy.listen(socket, done));
  return { socket, bodies, close: () => new Promise((done) => proxy.close(done)) };
}

test("each ask is sent only what is new, and the model is given the whole conversation", async () => {
  await started("since");
  const proxy = await recordingProxy();
  try {
    const agent = new Client({ socket: proxy.socket }).agent("agent-since");
    const model = scripted(bashCall("toolu_s1", "ls"), "Two files.", "Still two.");
    const tools = { Bash: async () => "a.txt\nb.txt" };
    await agent.runTurn("list the files", { model, permission: "allow", tools });
    await agent.runTurn("and now?", { model, permission: "allow", tools });
    const uuids = (messages) => messages.map((m) => m.uuid);
    const whole = uuids((await client.conversation("since")).messages);
    assert.equal(model.seen.length, 3);
    for (const [i, seen] of model.seen.entries()) {
      assert.deepEqual(uuids(seen), whole.slice(0, seen.length), `ask ${i} is the conversation's beginning`);
    }
    assert.ok(model.seen[2].length > model.seen[1].length && model.seen[1].length > model.seen[0].length);
    // The first step knows nothing; every later one names the last ask's last message.
    assert.equal(proxy.bodies[0].since, undefined);
    const sinces = proxy.bodies.slice(1).map((b) => b.since);
    assert.ok(sinces.every((s) => typeof s === "string" && whole.includes(s)), `since: ${sinces}`);
  } finally {
    await proxy.close();
  }
});

test("a tool's error and a tool not in the map are the calls' error results", async () => {
  const agent = await started("errors");
  const answer = [
    { type: "tool_use", id: "toolu_e1", name: "Bash", input: { command: "false" } },
    { type: "tool_use", id: "toolu_e2", name: "Nope", input: {} },
  ];
  const model = scripted(answer, "done");
  const run = await agent.runTurn("try", {
    model,
    permission: "allow",
    tools: { Bash: async () => { throw new Error("exit status 1"); } },
  });
  assert.equal(run.modelCalls, 2);
  const results = await blocks("errors", "tool_result");
  const byId = Object.fromEntries(results.map((b) => [b.tool_use_id, b]));
  assert.match(resultText(byId.toolu_e1), /exit status 1/);
  assert.equal(byId.toolu_e1.is_error, true);
  assert.match(resultText(byId.toolu_e2), /No such tool available: Nope/);
  assert.equal(byId.toolu_e2.is_error, true);
});

test("a host killed inside a tool comes back and finishes the turn", async () => {
  const agent = await started("crash");
  const model = scripted(bashCall("toolu_c1", "make"), "The build was cut off.");
  const controller = new AbortController();
  const killed = new Error("killed");
  let toolRuns = 0;
  const tools = {
    Bash: async () => {
      toolRuns++;
      controller.abort(killed);
      throw killed;
    },
  };
  await assert.rejects(agent.runTurn("build it", { model, tools, permission: "allow", signal: controller.signal }), (err) => err === killed);
  assert.equal(model.seen.length, 1);
  assert.equal(runs("stop", "crash"), 0);

  const run = await agent.runTurn(undefined, { model, tools, permission: "allow" });
  assert.equal(run.session, "crash");
  assert.equal(run.modelCalls, 1);
  assert.equal(model.seen.length, 2, "the model is asked once per answer, across both runs");
  assert.equal(toolRuns, 1, "the cut-off call is not given again");
  const results = await blocks("crash", "tool_result");
  assert.equal(results.length, 1);
  assert.equal(results[0].tool_use_id, "toolu_c1");
  assert.match(resultText(results[0]), /interrupted/i);
  assert.equal((await blocks("crash", "tool_use")).length, 1);
  const texts = (await blocks("crash", "text")).filter((b) => b.role === "assistant");
  assert.equal(texts.at(-1).text, "The build was cut off.");
  assert.equal(runs("pre", "crash"), 1);
  assert.equal(runs("stop", "crash"), 1);
});

test("a call left to ask: refused, the model sees the refusal; allowed, the tool runs", async () => {
  const agent = await started("asked");
  let toolRuns = 0;
  const tools = {
    Bash: async () => {
      toolRuns++;
      return "removed";
    },
  };
  const asked = [];
  const refusing = scripted(bashCall("toolu_a1", "rm -rf build"), "I will not remove it.");
  const no = await agent.runTurn("clean up", {
    model: refusing,
    tools,
    ask: (call, reason) => {
      asked.push([call.tool_use_id, call.name, call.input.command, typeof reason]);
      return { allow: false, refusal: "refusal-marker: not now" };
    },
  });
  assert.equal(no.modelCalls, 2);
  assert.deepEqual(asked, [["toolu_a1", "Bash", "rm -rf build", "string"]]);
  assert.equal(toolRuns, 0);
  const refusal = refusing.seen[1].flatMap((m) => m.content).find((b) => b.type === "tool_result");
  assert.equal(refusal.tool_use_id, "toolu_a1");
  assert.equal(refusal.is_error, true);
  assert.match(resultText(refusal), /refusal-marker: not now/);

  const allowing = scripted(bashCall("toolu_a2", "rm -rf build"), "Removed.");
  const yes = await agent.runTurn("clean up, really", { model: allowing, tools, ask: () => true });
  assert.equal(yes.modelCalls, 2);
  assert.equal(toolRuns, 1);
  const result = allowing.seen[1].flatMap((m) => m.content).filter((b) => b.type === "tool_result").at(-1);
  assert.equal(result.tool_use_id, "toolu_a2");
  assert.match(resultText(result), /removed/);

  // Without ask, a call left to ask is refused.
  const unasked = scripted(bashCall("toolu_a3", "rm -rf build"), "Fine.");
  await agent.runTurn("once more", { model: unasked, tools });
  assert.equal(toolRuns, 1);
  const refused = unasked.seen[1].flatMap((m) => m.content).filter((b) => b.type === "tool_result").at(-1);
  assert.equal(refused.tool_use_id, "toolu_a3");
  assert.equal(refused.is_error, true);
  assert.equal(runs("pre", "asked"), 3);
  assert.equal(runs("stop", "asked"), 3);
});

test("subagents: an Agent call's subagent runs its own turn, and its final text is the call's result", async () => {
  const agent = await started("parent");
  const asked = [];
  const model = async (messages, { agent: who, session }) => {
    asked.push([who, session]);
    if (who === "agent-parent") {
      const results = messages.flatMap((m) => m.content).filter((b) => b.type === "tool_result");
      if (results.length === 0) {
        return [{ type: "tool_use", id: "toolu_s1", name: "Agent", input: { description: "count", prompt: "count the files", subagent_type: "general-purpose" } }];
      }
      return `parent saw: ${resultText(results[0])}`;
    }
    const prompt = messages.flatMap((m) => m.content).find((b) => b.type === "text" && b.text.includes("count the files"));
    assert.ok(prompt, "the subagent is asked with its prompt");
    return "sub-answer: 3 files";
  };
  const run = await agent.runTurn("delegate", { model, tools: {}, permission: "allow", subagents: true });
  assert.equal(run.modelCalls, 3);
  assert.equal(asked.length, 3);
  const [sub, subSession] = asked[1];
  assert.notEqual(sub, "agent-parent");
  assert.equal(subSession, sub, "a subagent's session id is its agent name");
  const results = await blocks("parent", "tool_result");
  assert.equal(results.length, 1);
  assert.equal(results[0].tool_use_id, "toolu_s1");
  assert.match(resultText(results[0]), /sub-answer: 3 files/);
  const texts = (await blocks("parent", "text")).filter((b) => b.role === "assistant");
  assert.match(texts.at(-1).text, /parent saw: .*sub-answer: 3 files/);
  assert.equal(runs("stop", "parent"), 1);
});

test("a repeatable tool's cut-off call is given again, with again set", async () => {
  const agent = await started("again");
  const model = scripted(bashCall("toolu_r1", "go test"), "Tests pass.");
  const controller = new AbortController();
  const calls = [];
  const tools = {
    Bash: async (call, { signal }) => {
      calls.push(call.again);
      if (signal === controller.signal) {
        controller.abort(new Error("killed"));
        throw new Error("killed");
      }
      return "ok";
    },
  };
  const options = { model, tools, permission: "allow", repeatable: ["Bash"] };
  await assert.rejects(agent.runTurn("test it", { ...options, signal: controller.signal }), /killed/);
  const run = await agent.runTurn(undefined, options);
  assert.equal(run.modelCalls, 1);
  assert.equal(model.seen.length, 2);
  assert.deepEqual(calls, [false, true]);
  const results = await blocks("again", "tool_result");
  assert.equal(results.length, 1);
  assert.match(resultText(results[0]), /ok/);
  assert.doesNotMatch(resultText(results[0]), /interrupted/i);
  assert.equal(runs("pre", "again"), 1);
  assert.equal(runs("stop", "again"), 1);
});
