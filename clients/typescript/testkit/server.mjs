// Starts a real `reprise serve --write` for a test file, in temp
// directories, and stops it. Kept outside test/ so that node --test does
// not run it as a test file.

import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

/** A temp directory, removed by the returned cleanup. */
export function tempDir(prefix = "reprise-client-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** $REPRISE_BIN, else the reprise built from the repository into dir. */
export function binary(dir) {
  if (process.env.REPRISE_BIN) return process.env.REPRISE_BIN;
  const out = join(dir, "reprise");
  execFileSync("go", ["build", "-o", out, "./cmd/reprise"], { cwd: repoRoot, stdio: ["ignore", "inherit", "inherit"] });
  return out;
}

/** A settings file whose one SessionStart hook runs command. */
export function sessionStartSettings(command) {
  return { hooks: { SessionStart: [{ hooks: [{ type: "command", command }] }] } };
}

/** The command of a SessionStart hook that adds context to the session. */
export function contextHook(context) {
  const out = JSON.stringify({ hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: context } });
  return `echo '${out}'`;
}

/**
 * Starts serve --write with settings over a Unix socket, or over TCP with
 * a fresh token when tcp is true. Answers { socket } or { url, token },
 * the temp dir, and stop().
 */
export async function startServer({ bin, settings, tcp = false }) {
  const dir = tempDir("reprise-serve-");
  const home = join(dir, "home");
  const state = join(dir, "state");
  mkdirSync(home);
  mkdirSync(state);
  const settingsPath = join(dir, "settings.json");
  writeFileSync(settingsPath, JSON.stringify(settings));
  const env = { ...process.env, HOME: home, XDG_STATE_HOME: state };
  delete env.REPRISE_STORE;
  delete env.REPRISE_SERVE_TOKEN;
  const args = ["--store", join(dir, "reprise.db"), "serve", "--write"];
  let token;
  if (tcp) {
    token = randomBytes(16).toString("hex");
    env.REPRISE_SERVE_TOKEN = token;
    args.push("--addr", "127.0.0.1:0");
  } else {
    args.push("--socket", join(dir, "s.sock"));
  }
  args.push("--settings", settingsPath, "--no-default-settings", "--json");
  const child = spawn(bin, args, { env, cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => {
    stderr += s;
  });
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  const lines = createInterface({ input: child.stdout });
  const first = await Promise.race([
    new Promise((res) => lines.once("line", res)),
    exited.then(({ code, signal }) => {
      throw new Error(`reprise serve --write exited (${code ?? signal}) before it listened: ${stderr}`);
    }),
    new Promise((_, rej) => setTimeout(() => rej(new Error(`reprise serve --write printed nothing in 20 s: ${stderr}`)), 20000).unref()),
  ]);
  const info = JSON.parse(first);
  let where;
  if (tcp) {
    const url = new URL(info.url);
    if (url.searchParams.get("token") !== token) throw new Error(`serve's url ${info.url} does not carry the token given`);
    url.search = "";
    where = { url: url.toString(), token };
  } else {
    if (info.socket !== join(dir, "s.sock")) throw new Error(`serve listens on ${info.socket}, not the socket given`);
    where = { socket: info.socket };
  }
  return {
    ...where,
    dir,
    info,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
