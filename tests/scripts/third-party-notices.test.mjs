// `node scripts/third-party-notices.mjs --check`, the check of THIRD_PARTY_NOTICES that needs
// no cargo-about: the model's part is the model's NOTICE and LICENSE, the list of crates
// covers every crate the binaries compile in and only locked ones, and about.toml's policy is
// deny.toml's. Each case changes one of these in a copy of the repository.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { copyRepo, edit, repoRoot, runNode } from "./helpers.mjs";

// What `cargo metadata` and `cargo tree` read (the workspace's manifests and the sources that
// name its targets), and what the check compares.
const FILES = [
  "Cargo.toml",
  "Cargo.lock",
  "rust-toolchain.toml",
  "crates/*/Cargo.toml",
  "crates/*/build.rs",
  "crates/*/src/*",
  "crates/*/benches/*",
  "tests/e2e/Cargo.toml",
  "tests/e2e/src/*",
  "crates/satori-core/assets/model/NOTICE",
  "crates/satori-core/assets/model/LICENSE",
  "about.toml",
  "deny.toml",
  "THIRD_PARTY_NOTICES",
  "scripts/third-party-notices.mjs",
  "scripts/npm-packages.mjs",
];
const notices = fs.readFileSync(path.join(repoRoot, "THIRD_PARTY_NOTICES"), "utf8");
const listed = (name) => notices.match(new RegExp(`^  ${name} [^\\n]*\\n`, "m"))[0];

const CASES = [
  { name: "the repository as it is", change: () => {}, error: null },
  {
    name: "a grammar compiled in but not listed",
    change: (dir) => edit(dir, "THIRD_PARTY_NOTICES", listed("tree-sitter-rust"), ""),
    error: /does not list:\n  tree-sitter-rust \d/,
  },
  {
    name: "a crate listed at a version Cargo.lock does not have",
    change: (dir) => edit(dir, "THIRD_PARTY_NOTICES", listed("walkdir"), listed("walkdir").replace(/ (\d+)\./, " 9$1.")),
    error: /does not list:\n  walkdir [\s\S]*Cargo\.lock does not have:\n  walkdir 9/,
  },
  {
    name: "a crate listed under another licence than its manifest's",
    change: (dir) => edit(dir, "THIRD_PARTY_NOTICES", listed("tantivy"), listed("tantivy").replace(/: .*/, ": MIT OR Apache-2.0")),
    error: /does not list:\n  tantivy \d/,
  },
  {
    name: "the model's NOTICE changed",
    change: (dir) => fs.appendFileSync(path.join(dir, "crates/satori-core/assets/model/NOTICE"), "\nOne more line.\n"),
    error: /the model's part differs/,
  },
  {
    name: "deny.toml allows a licence about.toml does not accept",
    change: (dir) => edit(dir, "deny.toml", 'allow = [\n', 'allow = [\n    "MPL-2.0",\n'),
    error: /about\.toml accepted and deny\.toml \[licenses\] allow differ/,
  },
  {
    name: "about.toml leaves a release target out",
    change: (dir) => edit(dir, "about.toml", '    "aarch64-pc-windows-msvc",\n', ""),
    error: /about\.toml targets and deny\.toml \[graph\] targets differ/,
  },
];

/** Apply `change` to a fresh copy, run the check there, and hold it to `error`. */
function check({ change, error }) {
  const dir = copyRepo(FILES);
  change(dir);
  const result = runNode(dir, "scripts/third-party-notices.mjs", ["--check"]);
  if (error === null) {
    assert.equal(result.status, 0, result.stderr);
  } else {
    assert.equal(result.status, 1, `the check passed; stderr:\n${result.stderr}`);
    assert.match(result.stderr, error);
  }
}

for (const c of CASES) test(c.name, () => check(c));
