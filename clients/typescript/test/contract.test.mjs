// The client against its contract, api/openapi.json: every operation has
// its route in the client, and src/types.ts is what the document gives.
// And what the client makes of answers that are not the error JSON, from
// a plain HTTP server standing where a proxy in front of reprise would.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client, RepriseError, operations } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const contract = JSON.parse(readFileSync(join(here, "..", "..", "..", "api", "openapi.json"), "utf8"));

test("every operation of the document is routed by the client as the document says", () => {
  const documented = {};
  for (const [path, item] of Object.entries(contract.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (op && typeof op === "object" && op.operationId) documented[op.operationId] = { method: method.toUpperCase(), path };
    }
  }
  assert.deepEqual({ ...operations }, documented);
});

test("src/types.ts is what scripts/gen-types.mjs makes of the document", () => {
  // Exits non-zero, and so throws, when they differ.
  execFileSync(process.execPath, [join(here, "..", "scripts", "gen-types.mjs"), "--check"], { stdio: "pipe" });
});

/** A server answering every request with status, content type and body. */
async function answering(status, type, body) {
  const srv = createServer((req, res) => {
    req.resume();
    res.writeHead(status, { "content-type": type });
    res.end(body);
  });
  await new Promise((res) => srv.listen(0, "127.0.0.1", res));
  return { url: `http://127.0.0.1:${srv.address().port}`, close: () => new Promise((res) => srv.close(res)) };
}

for (const [what, status, type, body] of [
  ["an HTML page", 502, "text/html", "<html><body>Bad Gateway</body></html>"],
  ["JSON that is not the error's", 500, "application/json", '{"message":"boom"}'],
  ["an empty body", 503, "text/plain", ""],
]) {
  test(`a ${status} with ${what} is a RepriseError with code internal`, async () => {
    const srv = await answering(status, type, body);
    try {
      const err = await new Client({ url: srv.url }).save("s1").catch((e) => e);
      assert.ok(err instanceof RepriseError, String(err));
      assert.equal(err.code, "internal");
      assert.equal(err.status, status);
      assert.equal(err.busy, undefined);
    } finally {
      await srv.close();
    }
  });
}

test("a 200 whose body is not JSON is a RepriseError with code internal", async () => {
  const srv = await answering(200, "text/plain", "ok");
  try {
    await assert.rejects(new Client({ url: srv.url }).save("s1"), { name: "RepriseError", code: "internal", status: 200 });
  } finally {
    await srv.close();
  }
});
