// Signals sent to the `satori-mcp` shim at any moment of its start, many times: each run must
// end the shim and leave no `satori` running. The shim runs the real packaged server with its
// stdin on a FIFO that this test holds open (Node would close a pipe of its own when the shim
// exits), so a server that lost its shim would live on, as it does under an MCP client, and be
// found.
//
// Half the runs signal after a fixed delay from the start (0 ms to 1.5 s: during Node's own
// start, the shim's, the server's), the other half the moment the shim has forked its child: the instant a shim that listens too late
// dies with the child already started. Nothing here depends on how fast the machine is: every
// wait is for an event, with a generous bound.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { test } from "node:test";
import { project, satoriEnv, tempDir } from "./helpers.mjs";

const env = satoriEnv();
const shim = path.join(project, "node_modules", ".bin", "satori-mcp");
const linux = process.platform === "linux";

// The environment variable that marks the processes of one run (the shim and its child).
const MARK = "SATORI_NPM_PROOF_RUN";
const EXIT_BOUND_MS = 60_000;
const ORPHAN_GRACE_MS = 5_000;
const DELAYS_MS = [0, 0, 1, 2, 5, 10, 20, 50, 100, 200, 300, 450, 600, 800, 1100, 1500];

/** The runs: every delay and as many at-fork runs for SIGTERM, fewer for SIGINT and SIGHUP. */
function runs() {
  const list = [];
  for (const delay of DELAYS_MS) list.push({ signal: "SIGTERM", when: delay });
  for (let i = 0; i < DELAYS_MS.length; i++) list.push({ signal: "SIGTERM", when: "fork" });
  for (const signal of ["SIGINT", "SIGHUP"]) {
    for (const when of [0, 100, 400, 1000, "fork", "fork", "fork", "fork"]) list.push({ signal, when });
  }
  return list;
}

/** Pids of the live processes whose environment holds `MARK=mark`. */
function marked(mark) {
  const needle = `\0${MARK}=${mark}\0`;
  const pids = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`, "latin1");
    } catch {
      continue; // Gone, or not ours.
    }
    const state = statusOf(entry);
    if (state === "Z" || state === null) continue; // A zombie waits for its parent's wait(): it runs nothing.
    if (`\0${environ}`.includes(needle)) pids.push(Number(entry));
  }
  return pids;
}

function statusOf(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "latin1");
    return (status.match(/^State:\s+(\S)/m) || [])[1] ?? null;
  } catch {
    return null;
  }
}

/** Whether `pid` has a child yet (the fork has happened). */
function hasChild(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").trim() !== "";
  } catch {
    return false;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fifos = linux ? tempDir("satori-signals-") : null;

/** A FIFO opened for reading and writing: its reader never sees an end while it is open. */
function heldInput(name) {
  const file = path.join(fifos, name);
  const made = spawnSync("mkfifo", [file]);
  assert.equal(made.status, 0, `mkfifo: ${made.stderr}`);
  return fs.openSync(file, fs.constants.O_RDWR);
}

/** Starts the shim, signals it as `when` says, and reports how it ended and what it left. */
async function once(signal, when, mark) {
  const input = heldInput(mark);
  const child = spawn(shim, [], { cwd: project, env: { ...env, [MARK]: mark }, stdio: [input, "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => (stderr += chunk));
  const ended = new Promise((resolve) => child.on("exit", (code, sig) => resolve({ code, signal: sig })));
  if (when === "fork") {
    // Poll without yielding: the window between the fork and the listeners is short.
    const until = Date.now() + EXIT_BOUND_MS;
    while (!hasChild(child.pid) && !["Z", null].includes(statusOf(child.pid)) && Date.now() < until) {
      // Busy wait: a timer would let the window pass (and the event loop waits meanwhile, so
      // the shim's end is read from /proc).
    }
  } else if (when > 0) {
    await sleep(when);
  }
  child.kill(signal);
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), EXIT_BOUND_MS)));
  const end = await Promise.race([ended, timeout]);
  clearTimeout(timer);
  if (end === "timeout") child.kill("SIGKILL");
  // The shim is gone: whatever still carries the mark is the server it left behind.
  let left = marked(mark);
  for (const until = Date.now() + ORPHAN_GRACE_MS; left.length > 0 && Date.now() < until; left = marked(mark)) {
    await sleep(50);
  }
  for (const pid of left) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
  fs.closeSync(input);
  return { end, left, stderr };
}

test("a signal at any moment of the start reaches the server and ends the shim", { skip: !linux && "reads /proc", timeout: 900_000 }, async () => {
  const failures = [];
  const plan = runs();
  for (const [i, { signal, when }] of plan.entries()) {
    const { end, left, stderr } = await once(signal, when, `${process.pid}-${i}`);
    const conventional = 128 + os.constants.signals[signal];
    const what = `${signal} at ${when === "fork" ? "the fork" : `${when} ms`}`;
    if (end === "timeout") {
      failures.push(`${what}: the shim did not exit within ${EXIT_BOUND_MS} ms`);
    } else if (!(end.signal === signal || end.code === 0 || end.code === conventional)) {
      failures.push(`${what}: the shim ended with ${JSON.stringify(end)}; stderr: ${stderr}`);
    }
    if (left.length > 0) failures.push(`${what}: left ${left.length} process(es) running (pids ${left.join(", ")})`);
  }
  assert.deepEqual(failures, [], `${failures.length} problems in ${plan.length} runs`);
});
