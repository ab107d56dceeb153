// `node scripts/check-dist-config.mjs`, the check of the release archives without `dist`:
// every archive carries LICENSE and THIRD_PARTY_NOTICES and every binary of BINARIES. Each
// case breaks dist-workspace.toml or a file it names in a copy of the repository.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { copyRepo, edit, runNode } from "./helpers.mjs";

const FILES = [
  "Cargo.toml",
  "dist-workspace.toml",
  "LICENSE",
  "THIRD_PARTY_NOTICES",
  "crates/*/Cargo.toml",
  ".github/workflows/release.yml",
  "scripts/install-dist.sh",
  "scripts/check-dist-config.mjs",
  "scripts/npm-packages.mjs",
];
const INCLUDE = 'include = ["LICENSE", "THIRD_PARTY_NOTICES"]';

const CASES = [
  { name: "the repository as it is", change: () => {}, error: null },
  {
    name: "archives without the licence files",
    change: (dir) => edit(dir, "dist-workspace.toml", INCLUDE, ""),
    error: /include: \[\], expected \["LICENSE","THIRD_PARTY_NOTICES"\]/,
  },
  {
    name: "archives without the third-party notices",
    change: (dir) => edit(dir, "dist-workspace.toml", INCLUDE, 'include = ["LICENSE"]'),
    error: /include: \["LICENSE"\], expected/,
  },
  {
    name: "no THIRD_PARTY_NOTICES to include",
    change: (dir) => fs.rmSync(path.join(dir, "THIRD_PARTY_NOTICES")),
    error: /THIRD_PARTY_NOTICES is missing at the repository root/,
  },
  {
    name: "a binary's crate no longer builds it",
    change: (dir) => edit(dir, "crates/mcat/Cargo.toml", 'name = "mcat"\npath', 'name = "mcat-client"\npath'),
    error: /crates\/mcat has no bin mcat/,
  },
];

/** Apply `change` to a fresh copy, run the check there, and hold it to `error`. */
function check({ change, error }) {
  const dir = copyRepo(FILES);
  change(dir);
  const result = runNode(dir, "scripts/check-dist-config.mjs");
  if (error === null) {
    assert.equal(result.status, 0, result.stderr);
  } else {
    assert.equal(result.status, 1, `the check passed; stderr:\n${result.stderr}`);
    assert.match(result.stderr, error);
  }
}

for (const c of CASES) test(c.name, () => check(c));
