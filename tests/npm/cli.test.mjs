// `npx satori-cli ...` from a project that installed the packed tarballs: the shim finds the
// platform package's binary, and the CLI finds the server beside it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { envelopeOf, json, makeRepo, run, satoriEnv } from "./helpers.mjs";

const env = satoriEnv();
const repo = makeRepo();

test("npx satori-cli tools list prints the tools", () => {
  const result = run("npx", ["satori-cli", "tools", "list"], { env });
  assert.equal(result.status, 0, result.stderr);
  const names = json(result).tools.map((tool) => tool.name);
  for (const name of ["list_codebases", "manage_index", "search_codebase", "read_file"]) {
    assert.ok(names.includes(name), `${name} in ${names}`);
  }
});

test("npx satori-cli indexes and searches a repository", () => {
  const index = run("npx", ["satori-cli", "manage_index", "--action", "create", "--path", repo], { env });
  assert.equal(index.status, 0, index.stderr);
  assert.equal(envelopeOf(json(index)).state, "indexed");

  const search = run("npx", ["satori-cli", "search_codebase", "--path", repo, "--query", "guard recovery retry"], { env });
  assert.equal(search.status, 0, search.stderr);
  const envelope = envelopeOf(json(search));
  assert.equal(envelope.status, "ok");
  const files = JSON.stringify(envelope.results);
  assert.match(files, /client\/src\/recovery\.rs/);
});

test("npx mcat answers in JSON and keeps its exit codes", () => {
  const bad = run("npx", ["mcat", "init", "ftp://example.com/mcp", "-o", "s.json"], { env });
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(json(bad).error, /unknown scheme 'ftp:\/\/'/);
  const missing = run("npx", ["mcat", "tool", "list", "-s", "no-such-session.json"], { env });
  assert.equal(missing.status, 1, missing.stderr);
  assert.equal(json(missing).ok, false);
});

test("the CLI's exit code passes through the shim", () => {
  const result = run("npx", ["satori-cli", "search_codebase", "--no-such-flag", "x"], { env });
  assert.equal(result.status, 2, result.stderr);
  assert.match(result.stderr, /^E_USAGE/m);
});
