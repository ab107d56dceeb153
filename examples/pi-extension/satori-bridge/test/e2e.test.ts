/**
 * End to end: pi's own extension loader loads `index.ts` (through jiti, as pi
 * does), and the tools it registers drive the real `satori-cli` and `satori`
 * on a small repository: index, search, read, a non-ok envelope, the health
 * command, and guard recovery against a server wrapper that corrupts stdout
 * unless the guard is off.
 *
 * The CLI is `$SATORI_BRIDGE_TEST_CLI`, else the workspace's debug build;
 * without either the test is skipped (CI sets the variable, so there it runs).
 */

import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { discoverAndLoadExtensions, type Extension, type ExtensionCommandContext } from "@mariozechner/pi-coding-agent";

import type { BridgeToolDetails } from "../src/tools.ts";

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = resolve(here, "..", "..");
const repoRoot = resolve(packageDir, "..", "..", "..");

function findCli(): string | undefined {
  const explicit = process.env.SATORI_BRIDGE_TEST_CLI;
  if (explicit) {
    if (!existsSync(explicit)) throw new Error(`SATORI_BRIDGE_TEST_CLI=${explicit} does not exist`);
    return resolve(explicit);
  }
  const built = join(repoRoot, "target", "debug", "satori-cli");
  return existsSync(built) ? built : undefined;
}

const cli = findCli();

interface Ui {
  notes: { message: string; type: string | undefined }[];
}

function context(cwd: string, ui: Ui): ExtensionCommandContext {
  return {
    cwd,
    hasUI: true,
    ui: {
      notify: (message: string, type?: string) => ui.notes.push({ message, type }),
      setStatus: () => {},
    },
  } as unknown as ExtensionCommandContext;
}

/** Load the extension with pi's loader under a controlled environment. */
async function loadBridge(env: Record<string, string> & { PI_CODING_AGENT_DIR: string }, cwd: string): Promise<Extension> {
  const saved = { ...process.env };
  const savedCwd = process.cwd();
  try {
    Object.assign(process.env, env);
    process.chdir(cwd);
    // pi's discovery, given this extension as a configured path and an
    // empty agent directory, so nothing else on this machine is loaded.
    const loaded = await discoverAndLoadExtensions([join(packageDir, "index.ts")], cwd, env.PI_CODING_AGENT_DIR);
    assert.deepEqual(loaded.errors, []);
    const [extension] = loaded.extensions;
    assert.ok(extension, "the extension loaded");
    return extension;
  } finally {
    process.chdir(savedCwd);
    process.env = saved;
  }
}

async function execute(ext: Extension, tool: string, params: Record<string, unknown>, cwd: string) {
  const registered = ext.tools.get(tool);
  assert.ok(registered, `${tool} is registered (have: ${[...ext.tools.keys()].join(", ")})`);
  const out = await registered.definition.execute(`call-${tool}`, params, undefined, undefined, context(cwd, { notes: [] }));
  const first = out.content[0];
  return { text: first?.type === "text" ? first.text : "", details: out.details as BridgeToolDetails };
}

async function waitFor<T>(what: string, probe: () => T | undefined): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("e2e: pi loads the bridge and it indexes, searches and reads through the real satori-cli", { skip: cli === undefined && "no satori-cli: set SATORI_BRIDGE_TEST_CLI or build the workspace" }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "satori-bridge-e2e-"));
  try {
    const repo = join(dir, "repo");
    mkdirSync(join(repo, "src"), { recursive: true });
    writeFileSync(join(repo, "src", "billing.py"), "def compute_invoice_total(lines):\n    return sum(l.price * l.qty for l in lines)\n");
    writeFileSync(join(repo, "src", "auth.py"), "def verify_password(user, password):\n    return user.hash == hash(password)\n");
    const env = {
      SATORI_BRIDGE_COMMAND: cli as string,
      SATORI_HOME: join(dir, "satori-home"),
      PI_CODING_AGENT_DIR: join(dir, "pi-agent"),
    };
    const ext = await loadBridge(env, repo);
    for (const name of ["manage_index", "search_codebase", "read_file"]) assert.ok(ext.tools.has(name), name);

    // The tool runs see SATORI_HOME through the environment of the process.
    Object.assign(process.env, { SATORI_HOME: env.SATORI_HOME });

    const created = await execute(ext, "manage_index", { action: "create", path: repo }, repo);
    assert.equal(created.details.status, "ok", created.text);
    assert.match(created.text, /"state":"indexed"/);
    assert.equal(created.details.attemptCount, 1);

    const found = await execute(ext, "search_codebase", { path: ".", query: "invoice total" }, repo);
    assert.equal(found.details.status, "ok", found.text);
    assert.match(found.text, /billing\.py/);

    const read = await execute(ext, "read_file", { path: "@src/auth.py" }, repo);
    assert.match(read.text, /verify_password/);

    const elsewhere = join(dir, "not-indexed");
    mkdirSync(elsewhere);
    const missing = await execute(ext, "search_codebase", { path: elsewhere, query: "x" }, repo);
    assert.equal(missing.details.status, "not_indexed");
    assert.equal(missing.details.exitCode, 1);
    assert.deepEqual(
      [missing.details.attemptCount, missing.details.guardRecoveryAttempted, missing.details.effectiveGuardMode],
      [1, false, "drop"],
    );

    const ui: Ui = { notes: [] };
    await ext.commands.get("satori-mcp")?.handler("", context(repo, ui));
    const note = await waitFor("the health report", () => ui.notes[0]);
    assert.equal(note.type, "info");
    assert.match(note.message, /^Satori OK: \d+ tools \(.*search_codebase.*\)$/);
  } finally {
    delete process.env.SATORI_HOME;
    rmSync(dir, { recursive: true, force: true });
  }
});

test("e2e: a server that corrupts stdout is recovered with the guard off, and the guard stays off", { skip: cli === undefined && "no satori-cli: set SATORI_BRIDGE_TEST_CLI or build the workspace" }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "satori-bridge-e2e-"));
  try {
    const server = join(dirname(cli as string), "satori");
    const wrapper = join(dir, "noisy-satori");
    // What a wrapper script or an old server does: a banner on stdout, which
    // breaks the MCP stream, unless the guard has been turned off.
    writeFileSync(
      wrapper,
      `#!/bin/sh\nif [ "$SATORI_CLI_STDOUT_GUARD" != off ]; then echo "Starting Satori..."; fi\nexec "${server}" "$@"\n`,
    );
    chmodSync(wrapper, 0o755);
    const repo = join(dir, "repo");
    mkdirSync(repo);
    const env = {
      SATORI_BRIDGE_COMMAND: cli as string,
      SATORI_SERVER_BIN: wrapper,
      SATORI_HOME: join(dir, "satori-home"),
      PI_CODING_AGENT_DIR: join(dir, "pi-agent"),
      // A corrupted stdout breaks only a server started for the call: the per-user
      // server satori-cli attaches to by default speaks over a socket.
      SATORI_DAEMON: "off",
    };
    const saved = { ...process.env };
    try {
      const ext = await loadBridge(env, repo);
      // Discovery at load already needed the recovery; the tools are there.
      assert.ok(ext.tools.has("search_codebase"));
      Object.assign(process.env, env);
      const listed = await execute(ext, "list_codebases", {}, repo);
      // Sticky: this call started with the guard off and needed one attempt.
      assert.deepEqual(
        [listed.details.attemptCount, listed.details.guardRecoveryAttempted, listed.details.effectiveGuardMode],
        [1, false, "off"],
      );
      const ui: Ui = { notes: [] };
      await ext.commands.get("satori-mcp")?.handler("", context(repo, ui));
      const note = await waitFor("the health report", () => ui.notes[0]);
      assert.match(note.message, /^Satori OK: /);
    } finally {
      process.env = saved;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
