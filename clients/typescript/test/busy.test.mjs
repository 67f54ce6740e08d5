// Two calls at once on one agent whose SessionStart hook takes 2 s: one
// runs, the other is refused with 409 agent_busy rather than waiting.

import assert from "node:assert/strict";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Client, RepriseError } from "../dist/index.js";
import { binary, sessionStartSettings, startServer, tempDir } from "../testkit/server.mjs";

let build, server, client, cwd;

before(async () => {
  build = tempDir();
  server = await startServer({ bin: binary(build), settings: sessionStartSettings("sleep 2") });
  client = new Client({ socket: server.socket });
  cwd = join(server.dir, "work");
  mkdirSync(cwd);
});

after(async () => {
  await server?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

test("two restores at once on one agent: exactly one is agent_busy, 409", async () => {
  await client.createSession({ id: "b1", cwd });
  await client.createSession({ id: "b2", cwd });
  const agent = client.agent("slow");
  const began = Date.now();
  const results = await Promise.allSettled([agent.start({ session: "b1" }), agent.start({ session: "b2" })]);
  const ok = results.filter((r) => r.status === "fulfilled");
  const refused = results.filter((r) => r.status === "rejected");
  assert.equal(ok.length, 1, JSON.stringify(results.map((r) => r.reason?.message ?? r.value?.to)));
  assert.equal(refused.length, 1);
  const err = refused[0].reason;
  assert.ok(err instanceof RepriseError, String(err));
  assert.equal(err.code, "agent_busy", err.message);
  assert.equal(err.status, 409);
  if (err.busy !== undefined) assert.equal(typeof err.busy, "string");
  assert.equal(ok[0].value.restored, true);
  assert.ok(["b1", "b2"].includes(ok[0].value.to));
  assert.equal(ok[0].value.session_start?.hooks[0]?.status, "ok");
  // The restore that ran waited for its hook; the refusal did not make it fail.
  assert.ok(Date.now() - began >= 1900, "the hook's 2 s were waited for");
});

test("once the agent is free again, the next call on it goes through", async () => {
  const again = await client.agent("slow").resume({ session: "b2" }).catch((e) => e);
  // b2 may be the session the winner started already: then the resume is a no-op.
  assert.ok(!(again instanceof Error), String(again));
  assert.equal(again.to, "b2");
});
