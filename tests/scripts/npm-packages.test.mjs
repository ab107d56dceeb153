// `node scripts/npm-packages.mjs --check`: one list of binaries (BINARIES) that every place
// building or packaging the npm binaries follows. Each case breaks one of those places in a
// copy of the repository and names what the check must say, or null when it must pass.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { copyRepo, edit, runNode } from "./helpers.mjs";

const FILES = ["Cargo.toml", "package.json", "README.md", "npm", "scripts/npm-packages.mjs", "scripts/npm-proof.sh", ".github/workflows"];
const platformManifest = "npm/linux-x64-gnu/package.json";

const CASES = [
  { name: "the repository as it is", change: () => {}, error: null },
  {
    name: "the release workflow does not build mcat",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", " -p mcat", ""),
    error: /\.github\/workflows\/npm\.yml does not build mcat/,
  },
  {
    name: "the release workflow does not build the addon",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", " -p satori-node", ""),
    error: /\.github\/workflows\/npm\.yml does not build satori-node/,
  },
  {
    name: "a comment naming mcat does not count as building it",
    change: (dir) => edit(dir, ".github/workflows/npm.yml", " -p mcat", "\n# cargo build -p mcat"),
    error: /\.github\/workflows\/npm\.yml does not build mcat/,
  },
  {
    name: "the workspace's build script does not build mcat",
    change: (dir) => edit(dir, "package.json", " -p mcat", ""),
    error: /package\.json does not build mcat/,
  },
  {
    name: "the npm proof does not build mcat",
    change: (dir) => edit(dir, "scripts/npm-proof.sh", " -p mcat", ""),
    error: /scripts\/npm-proof\.sh does not build mcat/,
  },
  {
    name: "a --workspace build builds every binary",
    change: (dir) => edit(dir, "package.json", "--bins -p satori-mcp -p satori-cli -p mcat", "--workspace"),
    error: null,
  },
  {
    name: "a platform package leaves THIRD_PARTY_NOTICES out",
    change: (dir) => edit(dir, platformManifest, ',\n    "THIRD_PARTY_NOTICES"', ""),
    error: /npm manifests differ from scripts\/npm-packages\.mjs: npm\/linux-x64-gnu\/package\.json/,
  },
  {
    name: "a platform package leaves mcat out",
    change: (dir) => edit(dir, platformManifest, '\n    "bin/mcat",', ""),
    error: /npm manifests differ from scripts\/npm-packages\.mjs: npm\/linux-x64-gnu\/package\.json/,
  },
  {
    name: "the launcher's table lists no binaries",
    change: (dir) => edit(dir, "npm/satori-mcp/lib/targets.json", '"binaries"', '"programs"'),
    error: /npm manifests differ from scripts\/npm-packages\.mjs: npm\/satori-mcp\/lib\/targets\.json/,
  },
  {
    name: "a shim for a binary no package carries",
    change: (dir) => fs.writeFileSync(path.join(dir, "npm/satori-mcp/bin/extra.js"), "\n"),
    error: /npm\/satori-mcp\/bin has shims for .*extra.*; BINARIES has satori, satori-cli, mcat/,
  },
  {
    name: "the launcher's table loses the glibc the gnu build needs",
    change: (dir) => edit(dir, "npm/satori-mcp/lib/targets.json", '"glibc": "2.34"', '"glibc": null'),
    error: /npm manifests differ from scripts\/npm-packages\.mjs: npm\/satori-mcp\/lib\/targets\.json/,
  },
  {
    name: "a README states another glibc",
    change: (dir) => edit(dir, "README.md", "glibc 2.34 or newer", "glibc 2.31 or newer"),
    error: /README\.md says glibc 2\.31; the gnu packages need glibc 2\.34 or newer/,
  },
  {
    name: "the package's README states no glibc",
    change: (dir) => edit(dir, "npm/satori-mcp/README.md", "glibc 2.34 or newer", "a recent glibc"),
    error: /npm\/satori-mcp\/README\.md says glibc nothing/,
  },
  {
    name: "a newer glibc raised in the generator alone",
    change: (dir) => edit(dir, "scripts/npm-packages.mjs", 'GLIBC = "2.34"', 'GLIBC = "2.35"'),
    error: /README\.md says glibc 2\.34; the gnu packages need glibc 2\.35 or newer/,
  },
];

/** Apply `change` to a fresh copy, run the check there, and hold it to `error`. */
function check({ change, error }) {
  const dir = copyRepo(FILES);
  change(dir);
  const result = runNode(dir, "scripts/npm-packages.mjs", ["--check"]);
  if (error === null) {
    assert.equal(result.status, 0, result.stderr);
  } else {
    assert.equal(result.status, 1, `the check passed; stderr:\n${result.stderr}`);
    assert.match(result.stderr, error);
  }
}

for (const c of CASES) test(c.name, () => check(c));
