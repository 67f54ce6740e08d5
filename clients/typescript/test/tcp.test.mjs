// The client over TCP against a real serve --write with a token: the
// token is sent as a bearer header, and a wrong or missing one is 401.

import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client, RepriseError } from "../dist/index.js";
import { binary, contextHook, sessionStartSettings, startServer, tempDir } from "../testkit/server.mjs";

let build, server, cwd;

before(async () => {
  build = tempDir();
  server = await startServer({ bin: binary(build), settings: sessionStartSettings(contextHook("tcp-marker")), tcp: true });
  cwd = join(server.dir, "work");
  mkdirSync(cwd);
});

after(async () => {
  await server?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

async function unauthorized(promise) {
  const err = await promise.then(
    (v) => assert.fail(`expected unauthorized, got ${JSON.stringify(v)}`),
    (e) => e,
  );
  assert.ok(err instanceof RepriseError, `expected a RepriseError, got ${err}`);
  assert.equal(err.code, "unauthorized", err.message);
  assert.equal(err.status, 401);
}

test("the server listens on a loopback port it printed", () => {
  const url = new URL(server.url);
  assert.equal(url.hostname, "127.0.0.1");
  assert.notEqual(url.port, "0");
  assert.equal(server.info.token, true);
});

test("without the token, or with a wrong one, every write is 401 unauthorized", async () => {
  const wrong = server.token.replace(/^./, (c) => (c === "a" ? "b" : "a"));
  for (const client of [new Client({ url: server.url }), new Client({ url: server.url, token: wrong })]) {
    await unauthorized(client.createSession({ id: "never", cwd }));
    await unauthorized(client.agent("ide").start({ session: "never" }));
  }
  // Nothing of them was kept.
  const good = new Client({ url: server.url, token: server.token });
  await assert.rejects(good.agent("ide").start({ session: "never" }), { code: "session_not_found" });
});

test("with the token, a host starts an agent, appends, and reads back", async () => {
  const client = new Client({ url: server.url, token: server.token });
  const s = await client.createSession({ id: "t1", cwd });
  assert.equal(s.id, "t1");
  const started = await client.agent("ide").start({ session: "t1" });
  assert.equal(started.to, "t1");
  assert.equal(started.context, "tcp-marker");
  await client.append("t1", { role: "user", content: "over tcp" });
  const page = await client.conversation("t1");
  assert.equal(page.messages.length, 2);
  assert.equal(page.messages[0].meta, true);
  assert.equal(page.messages[1].content[0].text, "over tcp");
});

test("the token may come in the url's query, as serve prints it", async () => {
  const url = new URL(server.url);
  url.searchParams.set("token", server.token);
  const client = new Client({ url: url.toString() });
  const s = await client.createSession({ id: "t2", cwd });
  assert.equal(s.id, "t2");
  // An explicit token wins over the query's.
  await unauthorized(new Client({ url: url.toString(), token: "x".repeat(32) }).createSession({ id: "t3", cwd }));
});

test("an agent's name is URL-encoded into its path", async () => {
  const client = new Client({ url: server.url, token: server.token });
  await client.createSession({ id: "t4", cwd });
  // A name that is not one is refused whole, not routed elsewhere.
  await assert.rejects(client.agent("a/b").start({ session: "t4" }), (err) => {
    assert.ok(err instanceof RepriseError);
    assert.equal(err.code, "invalid_id");
    assert.equal(err.status, 400);
    return true;
  });
});
