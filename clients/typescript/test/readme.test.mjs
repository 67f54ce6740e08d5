// The README's host runs as it is against a real serve --write, and
// prints what it says it does.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

import { binary, contextHook, sessionStartSettings, startServer, tempDir } from "../testkit/server.mjs";

const here = dirname(fileURLToPath(import.meta.url));
let build, server;

before(async () => {
  build = tempDir();
  server = await startServer({ bin: binary(build), settings: sessionStartSettings(contextHook("ctx-marker")) });
});

after(async () => {
  await server?.stop();
  if (build) rmSync(build, { recursive: true, force: true });
});

test("the README's host runs and does what it says", async () => {
  const readme = readFileSync(join(here, "..", "README.md"), "utf8");
  const block = readme.match(/```js\n([\s\S]*?)```/);
  assert.ok(block, "the README has a js block");
  const lines = block[1].split("\n").length;
  assert.ok(lines <= 50, `the host is ${lines} lines`);
  const dist = pathToFileURL(join(here, "..", "dist", "index.js")).href;
  const code = block[1].replace('from "reprise-client"', `from ${JSON.stringify(dist)}`);
  assert.notEqual(code, block[1], "the host imports reprise-client");
  const file = join(server.dir, "host.mjs");
  writeFileSync(file, code);
  const project = join(server.dir, "project");
  mkdirSync(project);
  const { stdout } = await promisify(execFile)(process.execPath, [file], {
    env: { ...process.env, REPRISE_SOCKET: server.socket, PROJECT_DIR: project },
  });
  const out = stdout.split("\n");
  assert.equal(out[0], "context: ctx-marker");
  const moved = out[1].match(/^from (\S+) to (\S+)$/);
  assert.ok(moved, out[1]);
  assert.notEqual(moved[1], moved[2]);
  assert.equal(out[2], "turn over after 2 model calls");
  // The second session: its hook's meta message, the call, its result,
  // then the turn: the prompt, the model's call, its result, the answer.
  assert.deepEqual(out.slice(3, 6), ["user (meta) text", "assistant  tool_use", "user  tool_result"]);
  assert.deepEqual(out.slice(6, 10), ["user  text", "assistant  tool_use", "user  tool_result", "assistant  text"]);
  assert.equal(out[10], "404 session_not_found");
});
