// record.js is the Node.js half of record.sh: the Node.js stand-ins call
// it to keep how the hook was run, in the same layout.
const fs = require("fs");
const path = require("path");

const names = ["CLAUDECODE", "CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR",
  "CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA", "CLAUDE_ENV_FILE"];

module.exports = function record() {
  const dir = process.env.REPRISE_TEST_RECORDS;
  const tmp = fs.mkdtempSync(path.join(dir, ".run-"));
  const write = (name, text) => fs.writeFileSync(path.join(tmp, name), text);
  write("argv", process.argv.slice(1).map((a) => a + "\n").join(""));
  write("cwd", fs.realpathSync(process.cwd()) + "\n");
  write("env", names.filter((n) => n in process.env).map((n) => `${n}=${process.env[n]}\n`).join(""));
  write("stdin", fs.readFileSync(0));
  fs.renameSync(tmp, path.join(dir, "run-" + path.basename(tmp).slice(".run-".length)));
};
