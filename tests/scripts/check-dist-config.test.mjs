// `node scripts/check-dist-config.mjs`, the check of the release archives without `dist`:
// every archive carries LICENSE and THIRD_PARTY_NOTICES and every binary of BINARIES, each app
// builds only its own crate, and no workflow or dist setting names a retired runner image.
// Each case breaks dist-workspace.toml or a file it names in a copy of the repository.
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
  ".github/workflows",
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
  {
    name: "dist builds the whole workspace for each app",
    change: (dir) => edit(dir, "dist-workspace.toml", "precise-builds = true", "precise-builds = false"),
    error: /precise-builds must be true/,
  },
  {
    name: "no precise-builds at all",
    change: (dir) => edit(dir, "dist-workspace.toml", "precise-builds = true", ""),
    error: /precise-builds must be true/,
  },
  {
    name: "the npm workflow builds darwin-x64 on a retired image",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", "runner: macos-15-intel", "runner: macos-13"),
    error: /\.github\/workflows\/npm\.yml names the retired runner image macos-13/,
  },
  {
    name: "a larger size of a retired image",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", "runner: macos-15-intel", "runner: macos-13-large"),
    error: /names the retired runner image macos-13/,
  },
  {
    name: "dist pinned to a retired image",
    change: (dir) => edit(dir, "dist-workspace.toml", 'x86_64-apple-darwin = "macos-15-intel"', 'x86_64-apple-darwin = "macos-12"'),
    error: /dist-workspace\.toml names the retired runner image macos-12/,
  },
  {
    name: "the release workflow on a retired Linux image",
    change: (dir) => edit(dir, ".github/workflows/release.yml", 'runs-on: "ubuntu-22.04"', 'runs-on: "ubuntu-20.04"'),
    error: /\.github\/workflows\/release\.yml names the retired runner image ubuntu-20\.04/,
  },
  {
    name: "a current image whose name starts like a retired one",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", "runner: macos-14 }", "runner: macos-130 }"),
    error: null,
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
