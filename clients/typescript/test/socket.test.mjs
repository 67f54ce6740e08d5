// The client over a Unix socket against a real serve --write: sessions,
// a startup restore with its hook's context, messages, a runtime restore
// to another session, a tool call and its result, and the errors.

import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client, RepriseError } from "../dist/index.js";
import { binary, contextHook, sessionStartSettings, startServer, tempDir } from "../testkit/server.mjs";

let build, server, client, cwd;

before(async () => {
  build = tempDir();
  server = await startServer({ bin: binary(build), settings: sessionStartSettings(contextHook("ctx-marker")) });
  client = new Client({ socket: server.socket });
  cwd = join(server.dir, "work");
  mkdirSync(cwd);
});

after(async () => {
  await server?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

/** The text of a message's text blocks, joined. */
function textOf(message) {
  return message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

async function rejectsWith(promise, code, status) {
  const err = await promise.then(
    (v) => assert.fail(`expected ${code}, got ${JSON.stringify(v)}`),
    (e) => e,
  );
  assert.ok(err instanceof RepriseError, `expected a RepriseError, got ${err}`);
  assert.equal(err.code, code, err.message);
  assert.equal(err.status, status);
  assert.ok(err.message.length > 0);
  return err;
}

test("a host's day: two sessions, start, messages, resume, a tool call, read back", async () => {
  const one = await client.createSession({ id: "one", cwd });
  assert.equal(one.id, "one");
  assert.equal(one.cwd, cwd);
  assert.equal(one.messages, 0);
  const two = await client.createSession({ cwd });
  assert.notEqual(two.id, "one");
  assert.ok(two.id.length > 0);

  const ide = client.agent("ide");
  const started = await ide.start({ session: "one" });
  assert.equal(started.agent, "ide");
  assert.equal(started.restored, true);
  assert.equal(started.to, "one");
  assert.equal(started.source, "startup");
  assert.equal(started.context, "ctx-marker");
  assert.ok(started.injected_message);

  const u = await client.append("one", { role: "user", content: "why does the test flake?" });
  assert.equal(u.session, "one");
  assert.equal(u.buffered, false);
  const a = await client.append("one", { role: "assistant", content: [{ type: "text", text: "a race" }] });
  assert.notEqual(a.uuid, u.uuid);

  const page = await client.conversation("one");
  assert.equal(page.session, "one");
  const [meta, user, assistant] = page.messages;
  assert.equal(page.messages.length, 3);
  assert.equal(meta.uuid, started.injected_message);
  assert.equal(meta.meta, true);
  assert.match(textOf(meta), /^<system-reminder>[\s\S]*ctx-marker[\s\S]*<\/system-reminder>$/);
  assert.equal(user.uuid, u.uuid);
  assert.equal(textOf(user), "why does the test flake?");
  assert.equal(assistant.role, "assistant");
  assert.equal(textOf(assistant), "a race");

  const resumed = await ide.resume({ session: two.id });
  assert.equal(resumed.restored, true);
  assert.equal(resumed.source, "resume");
  assert.equal(resumed.from, "one");
  assert.equal(resumed.to, two.id);
  assert.equal(resumed.session_end?.reason, "resume");
  assert.equal(resumed.session_start?.source, "resume");
  assert.equal(resumed.session_start?.hooks.length, 1);
  assert.equal(resumed.context, "ctx-marker");

  const decision = await ide.tool({
    tool_use_id: "toolu_1",
    name: "Read",
    input: { file_path: "/etc/hostname" },
    permission: "allow",
    add_tool_use: true,
  });
  assert.equal(decision.decision, "allow");
  assert.equal(decision.interrupted, false);
  const feedback = await ide.toolResult({ tool_use_id: "toolu_1", output: "box" });
  assert.equal(feedback.already_recorded, false);
  assert.equal(feedback.blocked, false);
  const again = await ide.toolResult({ tool_use_id: "toolu_1", output: "other" });
  assert.equal(again.already_recorded, true);

  const back = await client.conversation(two.id);
  const blocks = back.messages.flatMap((m) => m.content.map((b) => ({ role: m.role, ...b })));
  const use = blocks.find((b) => b.type === "tool_use");
  const result = blocks.find((b) => b.type === "tool_result");
  assert.deepEqual(use, { role: "assistant", type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "/etc/hostname" } });
  assert.equal(result?.role, "user");
  assert.equal(result?.tool_use_id, "toolu_1");
  assert.equal(result?.content, "box");
  // The first session still holds its own messages and none of the call.
  const first = await client.conversation("one");
  assert.equal(first.messages.length, 3);
});

test("buffered messages wait for save; a page ends with a cursor to the next", async () => {
  const s = await client.createSession({ id: "buffered", cwd });
  const b1 = await client.append(s.id, { role: "user", content: "one", buffer: true });
  assert.equal(b1.buffered, true);
  await client.append(s.id, { role: "assistant", content: "two", buffer: true });
  const saved = await client.save(s.id);
  assert.deepEqual(saved, { session: s.id, saved: 2 });
  await client.append(s.id, { role: "user", content: "three" });
  const p1 = await client.conversation(s.id, { limit: 2 });
  assert.deepEqual(p1.messages.map(textOf), ["one", "two"]);
  assert.ok(p1.next_cursor, "a first page of 2 of 3 names where the next starts");
  const p2 = await client.conversation(s.id, { limit: 2, cursor: p1.next_cursor });
  assert.deepEqual(p2.messages.map(textOf), ["three"]);
  assert.equal(p2.next_cursor, undefined);
});

test("the conversation newest first, and the store's events a page at a time, filtered", async () => {
  const s = await client.createSession({ id: "logged", cwd });
  for (const text of ["one", "two", "three"]) await client.append(s.id, { role: "user", content: text });
  const newest = await client.conversation(s.id, { order: "newest", limit: 2 });
  assert.deepEqual(newest.messages.map(textOf), ["three", "two"]);

  const stream = `session/${s.id}`;
  const first = await client.events({ stream, type: "MessageAppended", limit: 2 });
  assert.equal(first.total, 3);
  assert.deepEqual(first.events.map((e) => [e.stream, e.type, e.seq]), [[stream, "MessageAppended", 2], [stream, "MessageAppended", 3]]);
  assert.ok(first.next_cursor, "a first page of 2 of 3 names where the next starts");
  const next = await client.events({ stream, type: "MessageAppended", limit: 2, cursor: first.next_cursor });
  assert.deepEqual(next.events.map((e) => e.seq), [4]);
  assert.equal(next.from, 3);
  const none = await client.events({ stream, until: "2000-01-01" });
  assert.equal(none.total, 0);
  assert.deepEqual(none.events, []);
  await rejectsWith(client.events({ since: "yesterday" }), "bad_request", 400);
});

test("session hooks are added and removed by id; a session is deleted", async () => {
  const s = await client.createSession({ id: "hooked", cwd });
  const added = await client.addHooks(s.id, {
    hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "true" }, { type: "command", command: "exit 0" }] }] },
  });
  assert.equal(added.session, s.id);
  assert.equal(added.ids.length, 2);
  const removed = await client.removeHook(s.id, added.ids[0]);
  assert.deepEqual(removed, { session: s.id, id: added.ids[0], removed: true });
  await rejectsWith(client.removeHook(s.id, added.ids[0]), "hook_not_found", 404);
  assert.deepEqual(await client.deleteSession(s.id), { session: s.id, deleted: true });
  const gone = await client.append(s.id, { role: "user", content: "late" }).catch((e) => e);
  assert.ok(gone instanceof RepriseError);
  assert.equal(gone.code, "session_deleted");
});

test("a missing session is session_not_found, 404", async () => {
  await rejectsWith(client.append("no-such-session", { role: "user", content: "hi" }), "session_not_found", 404);
  await rejectsWith(client.save("no-such-session"), "session_not_found", 404);
  await rejectsWith(client.deleteSession("no-such-session"), "session_not_found", 404);
  await rejectsWith(client.agent("ide2").start({ session: "no-such-session" }), "session_not_found", 404);
});

test("reading a missing session's conversation is session_not_found, 404", async () => {
  await rejectsWith(client.conversation("no-such-session"), "session_not_found", 404);
});

test("a bad body is bad_request, 400", async () => {
  await rejectsWith(client.createSession({ cwd, colour: "blue" }), "bad_request", 400);
  await rejectsWith(client.createSession({ cwd: 7 }), "bad_request", 400);
  await rejectsWith(client.agent("ide").tool({ name: "Read" }), "bad_request", 400);
});

test("path segments are URL-encoded", async () => {
  // Sent as it is, the slash would name another route (not_found); encoded,
  // the server reads the whole id and refuses it as one.
  await rejectsWith(client.append("one/messages", { role: "user", content: "hi" }), "invalid_id", 400);
});

test("an aborted call rejects with an AbortError", async () => {
  const controller = new AbortController();
  controller.abort();
  await assert.rejects(client.conversation("one", { signal: controller.signal }), { name: "AbortError" });
  // The client goes on working after it.
  assert.equal((await client.conversation("one")).session, "one");
});

test("the served contract is the one the client was built from", async () => {
  const doc = await client.openapi();
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.paths["/api/sessions"]);
});

test("the other actions of an agent reach their routes", async () => {
  await client.createSession({ id: "ops1", cwd });
  const ops = client.agent("ops");
  assert.equal(ops.name, "ops");
  assert.equal((await ops.start({ session: "ops1" })).to, "ops1");
  const prompted = await ops.prompt({ text: "go" });
  assert.equal(prompted.session, "ops1");
  assert.equal(prompted.blocked, false);
  await client.append("ops1", { role: "assistant", content: "done" });
  const stopped = await ops.stop({ reason: "end_turn" });
  assert.equal(stopped.blocked, false);
  const fired = await ops.fire({ event: "Notification", id: "n1", fields: { message: "waiting", notification_type: "idle_prompt" } });
  assert.equal(fired.id, "n1");
  assert.equal(fired.already_recorded, false);
  assert.equal((await ops.fire({ event: "Notification", id: "n1", fields: { message: "waiting" } })).already_recorded, true);
  const forked = await ops.fork({ parent: "ops1" });
  assert.equal(forked.from, "ops1");
  assert.notEqual(forked.to, "ops1");
  const compacted = await ops.compact({ summary: "we said go" });
  assert.equal(compacted.restored, true);
  const fresh = await ops.new({ cwd, id: "ops2" });
  assert.equal(fresh.to, "ops2");
  const cleared = await ops.clear();
  assert.notEqual(cleared.to, "ops2");
  const ended = await ops.end({ reason: "logout" });
  assert.equal(ended.agent, "ops");
  const finished = await ops.finish();
  assert.equal(finished.agent, "ops");
  assert.equal(typeof finished.finished, "boolean");
  await assert.rejects(client.agent("never-seen").finish(), { code: "agent_not_found", status: 404 });
});

test("one turn step: a prompt is answered with the conversation to ask the model", async () => {
  await client.createSession({ id: "turn1", cwd });
  const t = client.agent("turner");
  await t.start({ session: "turn1" });
  const step = await t.turn({ prompt: "list the files", permission: "allow" });
  assert.equal(step.step, "ask");
  assert.equal(step.session, "turn1");
  assert.ok(step.after);
  const last = step.messages.at(-1);
  assert.equal(last.uuid, step.after);
  assert.equal(last.content[0].text, "list the files");
  const over = await t.turn({ answer: { role: "assistant", content: "a.txt" }, after: step.after });
  assert.equal(over.step, "over");
});
