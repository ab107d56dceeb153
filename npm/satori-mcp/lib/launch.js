// Running a packaged binary in place of this Node process: the bin shims call `launch`.
//
// The child inherits stdin, stdout and stderr, so MCP traffic flows between the client and
// the server directly and never through JavaScript. Signals sent to the shim are passed on,
// and the shim ends the way the child ended: the same exit code, or the same signal.
"use strict";

const { spawn } = require("node:child_process");
const os = require("node:os");
const { ensureExecutable, packagedBinary } = require("./platform");

// The environment variables that name a binary to run instead of the packaged one. Setting
// SATORI_BINARY also makes satori-cli start that server.
const OVERRIDES = { satori: "SATORI_BINARY", "satori-cli": "SATORI_CLI_BINARY", mcat: "MCAT_BINARY" };
const FORWARDED = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"];

function say(line) {
  process.stderr.write(`${line}\n`);
}

/** Start `name` with this process's arguments and mirror its end. */
function launch(name) {
  // Listen before the child exists: a signal that finds no listener ends this process by its
  // default action at once, and one that came after the fork but before the listeners would
  // leave the child running with no one to stop it. Listeners run from the event loop, so
  // after this function returns: the child is there by then.
  let child;
  const forward = (signal) => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of FORWARDED) {
    if (process.platform !== "win32" || signal === "SIGINT") process.on(signal, forward);
  }

  const env = { ...process.env };
  let file = process.env[OVERRIDES[name]];
  if (!file) {
    try {
      file = packagedBinary(name);
    } catch (error) {
      say(error.message);
      process.exit(1);
    }
    // Every binary: satori-cli starts the satori beside it without passing through a shim.
    for (const sibling of Object.keys(OVERRIDES)) ensureExecutable(packagedBinary(sibling));
  }
  if (name === "satori-cli" && process.env.SATORI_BINARY && !process.env.SATORI_SERVER_BIN) {
    env.SATORI_SERVER_BIN = process.env.SATORI_BINARY;
  }

  child = spawn(file, process.argv.slice(2), { stdio: "inherit", env, windowsHide: true });
  child.on("error", (error) => {
    say(`${name}: cannot start ${file}: ${error.message}`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => {
    if (signal) endLike(signal);
    process.exit(code === null ? 1 : code);
  });
}

/** End this process by `signal`, as the child ended. */
function endLike(signal) {
  for (const s of FORWARDED) process.removeAllListeners(s);
  process.kill(process.pid, signal);
  // A signal whose default action does not end a process: exit as a shell reports it.
  process.exit(128 + (os.constants.signals[signal] || 0));
}

module.exports = { launch };
