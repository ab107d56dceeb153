#!/usr/bin/env node
// Puts a cargo build of this machine into its platform package (npm/<platform>/): the
// binaries of BINARIES (scripts/npm-packages.mjs) under bin/ and the addon as
// satori.<platform>.node, copies LICENSE and THIRD_PARTY_NOTICES from the repository root into
// that package and the root package, then gives every packaged binary mode 0755
// (fix-bin-perms: npm keeps the tarball's mode, so a binary packed without its executable bit
// installs without it). The release workflow stages each target the same way from that
// target's build, and assembles the packages with --assemble before publishing.
//
// Usage: node scripts/npm-stage.mjs [--profile debug|release] [--target-dir DIR] [--platform ID]
//        node scripts/npm-stage.mjs --fix-bin-perms      (only the chmod step, for every package)
//        node scripts/npm-stage.mjs --assemble           (the licence files into every package, then the chmod step)
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { ADDON_CRATE, BINARIES, LICENCE_FILES } from "./npm-packages.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const { platformId } = require(path.join(root, "npm/satori-mcp/lib/platform.js"));

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
}

/** chmod 0755 every binary under npm/*\/bin. */
function fixBinPerms() {
  const npm = path.join(root, "npm");
  for (const dir of fs.readdirSync(npm)) {
    const bin = path.join(npm, dir, "bin");
    if (dir === "satori-mcp" || !fs.existsSync(bin)) continue;
    for (const file of fs.readdirSync(bin)) fs.chmodSync(path.join(bin, file), 0o755);
  }
  // The shims are scripts run through their shebang.
  for (const file of fs.readdirSync(path.join(npm, "satori-mcp", "bin"))) {
    fs.chmodSync(path.join(npm, "satori-mcp", "bin", file), 0o755);
  }
}

/** Copy LICENSE and THIRD_PARTY_NOTICES from the repository root into each package named. */
function copyLicences(ids) {
  for (const id of ids) {
    for (const file of LICENCE_FILES) {
      const source = path.join(root, file);
      if (!fs.existsSync(source)) {
        process.stderr.write(`${source} is missing: every npm package ships it\n`);
        process.exit(1);
      }
      fs.copyFileSync(source, path.join(root, "npm", id, file));
    }
  }
}

if (process.argv.includes("--fix-bin-perms")) {
  fixBinPerms();
  process.exit(0);
}
if (process.argv.includes("--assemble")) {
  copyLicences(fs.readdirSync(path.join(root, "npm")).filter((id) => fs.existsSync(path.join(root, "npm", id, "package.json"))));
  fixBinPerms();
  process.exit(0);
}

const id = option("--platform", platformId());
const profile = option("--profile", "release");
const targetDir = path.resolve(root, option("--target-dir", process.env.CARGO_TARGET_DIR || "target"));
const build = path.join(targetDir, profile);
const pkg = path.join(root, "npm", id);
if (!fs.existsSync(path.join(pkg, "package.json"))) {
  process.stderr.write(`npm/${id}/package.json does not exist: no release is built for ${id}\n`);
  process.exit(1);
}
const windows = id.startsWith("win32-");
const exe = windows ? ".exe" : "";
const addon = windows ? "satori_node.dll" : id.startsWith("darwin-") ? "libsatori_node.dylib" : "libsatori_node.so";
const copies = [...BINARIES.map((b) => [`${b.name}${exe}`, `bin/${b.name}${exe}`]), [addon, `satori.${id}.node`]];
const crates = [...BINARIES.map((b) => b.crate), ADDON_CRATE].map((crate) => `-p ${crate}`).join(" ");
fs.mkdirSync(path.join(pkg, "bin"), { recursive: true });
for (const [from, to] of copies) {
  const source = path.join(build, from);
  if (!fs.existsSync(source)) {
    process.stderr.write(`${source} is missing: build it first (cargo build ${crates})\n`);
    process.exit(1);
  }
  // Copy to a new inode: a hard link or an overwrite in place would change the build output.
  fs.rmSync(path.join(pkg, to), { force: true });
  fs.copyFileSync(source, path.join(pkg, to));
}
copyLicences([id, "satori-mcp"]);
fixBinPerms();
process.stderr.write(`staged ${profile} build into npm/${id}\n`);
