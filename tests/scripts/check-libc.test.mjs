// `node scripts/check-libc.mjs`: a gnu build references no GLIBC_ symbol version newer than the
// glibc the npm packages declare (GLIBC of scripts/npm-packages.mjs), and a musl build needs no
// shared library. The builds here are stand-ins with the same linkage questions: links to the
// running node, a glibc-linked program, under the names the script looks for.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { copyRepo, edit, runNode } from "./helpers.mjs";

const FILES = ["scripts/check-libc.mjs", "scripts/npm-packages.mjs"];
const glibcNode = process.platform === "linux" && Boolean(process.report.getReport().header.glibcVersionRuntime);
const skip = glibcNode ? false : "node here does not link glibc";

/** A build directory `<dir>/<target>/release` whose binaries (and addon) are links to node. */
function nodeBuild(dir, target) {
  const build = path.join(dir, "target", target, "release");
  fs.mkdirSync(build, { recursive: true });
  for (const name of ["satori", "satori-cli", "mcat", "libsatori_node.so"]) fs.symlinkSync(process.execPath, path.join(build, name));
}

const CASES = [
  {
    name: "a gnu build within the declared glibc",
    change: (dir) => edit(dir, "scripts/npm-packages.mjs", 'GLIBC = "2.34"', 'GLIBC = "99.0"'),
    args: ["--target", "x86_64-unknown-linux-gnu", "--addon"],
    error: null,
  },
  {
    name: "a gnu build that needs a newer glibc than declared",
    change: (dir) => edit(dir, "scripts/npm-packages.mjs", 'GLIBC = "2.34"', 'GLIBC = "2.1"'),
    args: ["--target", "x86_64-unknown-linux-gnu", "--addon"],
    error: /satori needs GLIBC_[0-9.]+, newer than the glibc 2\.1 the npm packages declare/,
  },
  {
    name: "the addon is held to it too",
    change: (dir) => edit(dir, "scripts/npm-packages.mjs", 'GLIBC = "2.34"', 'GLIBC = "2.1"'),
    args: ["--target", "x86_64-unknown-linux-gnu", "--addon"],
    error: /libsatori_node\.so needs GLIBC_[0-9.]+, newer than the glibc 2\.1/,
  },
  {
    name: "a musl build linked dynamically",
    change: () => {},
    args: ["--target", "x86_64-unknown-linux-musl", "--addon"],
    error: /satori-cli needs [^:]*libc\.so[^:]*: a musl build must link its C library statically/,
  },
  {
    name: "a build that is not there",
    change: () => {},
    args: ["--target", "aarch64-unknown-linux-gnu"],
    error: /aarch64-unknown-linux-gnu\/release\/mcat is missing: build it first/,
  },
];

/** Apply `change` to a fresh copy with node builds, run the check there, and hold it to `error`. */
function check({ change, args, error }) {
  const dir = copyRepo(FILES);
  nodeBuild(dir, "x86_64-unknown-linux-gnu");
  nodeBuild(dir, "x86_64-unknown-linux-musl");
  change(dir);
  const result = runNode(dir, "scripts/check-libc.mjs", ["--profile", "release", "--target-dir", "target", ...args]);
  if (error === null) {
    assert.equal(result.status, 0, result.stderr);
  } else {
    assert.equal(result.status, 1, `the check passed; stderr:\n${result.stderr}`);
    assert.match(result.stderr, error);
  }
}

for (const c of CASES) test(c.name, { skip }, () => check(c));
