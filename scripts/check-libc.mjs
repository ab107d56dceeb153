#!/usr/bin/env node
// What a Linux build asks of the C library, held to what the npm packages promise. A glibc
// build (the linux-gnu packages) may reference no GLIBC_ symbol version newer than GLIBC, the
// one number of scripts/npm-packages.mjs that the packages, the launcher and the READMEs
// carry; a musl build (the linux-musl packages) must need no shared library at all, since the
// launcher runs its binaries on any Linux, glibc ones included. Reads the dynamic section and
// symbol table with objdump. CI runs it on its debug build, the npm proof on the binaries and
// addon it packs, the npm workflow on each Linux release build.
//
// Usage: node scripts/check-libc.mjs [--target-dir DIR] [--profile debug|release] [--target TRIPLE] [--addon]
//        node scripts/check-libc.mjs --file PATH...      (given files, held to GLIBC)
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { BINARIES, GLIBC } from "./npm-packages.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : process.argv[at + 1];
}

/** -1, 0 or 1 as version `a` ("2.34") is older than, the same as or newer than `b`. */
export function compareVersions(a, b) {
  const x = a.split(".").map(Number);
  const y = b.split(".").map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i += 1) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) < (y[i] ?? 0) ? -1 : 1;
  }
  return 0;
}

/** The newest GLIBC_ version in objdump's dynamic symbol table output, or null. */
export function newestGlibc(symbols) {
  const versions = [...symbols.matchAll(/\bGLIBC_(\d+(?:\.\d+)+)\b/g)].map((m) => m[1]);
  return versions.reduce((newest, v) => (newest === null || compareVersions(v, newest) > 0 ? v : newest), null);
}

/** The shared libraries objdump's private headers output says a file needs. */
export function neededLibraries(headers) {
  return [...headers.matchAll(/^\s*NEEDED\s+(\S+)/gm)].map((m) => m[1]);
}

function objdump(flag, file) {
  try {
    return execFileSync("objdump", [flag, file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    process.stderr.write(`objdump ${flag} ${file} failed: ${error.stderr || error.message}\n(objdump comes with binutils)\n`);
    process.exit(1);
  }
}

/** The files to check: the given ones, or the build's binaries (and addon). */
function files() {
  const given = [];
  process.argv.forEach((arg, i) => {
    if (arg === "--file") given.push(process.argv[i + 1]);
  });
  if (given.length > 0) return given.map((file) => path.resolve(file));
  const target = option("--target", "");
  const build = path.resolve(root, option("--target-dir", process.env.CARGO_TARGET_DIR || "target"), target, option("--profile", "release"));
  const list = BINARIES.map((b) => path.join(build, b.name));
  if (process.argv.includes("--addon")) list.push(path.join(build, "libsatori_node.so"));
  return list;
}

function main() {
  const target = option("--target", "");
  if (!target && process.platform !== "linux") {
    process.stderr.write(`libc: nothing to check on ${process.platform}\n`);
    return;
  }
  // The musl packages' binaries must be static; their addon loads into node, which links musl
  // dynamically, so it may need libc.
  const musl = target.includes("-musl");
  const problems = [];
  const said = [];
  for (const file of files()) {
    const name = path.basename(file);
    if (!fs.existsSync(file)) {
      problems.push(`${file} is missing: build it first`);
      continue;
    }
    if (musl && !name.endsWith(".so")) {
      const needed = neededLibraries(objdump("-p", file));
      if (needed.length > 0) problems.push(`${name} needs ${needed.join(", ")}: a musl build must link its C library statically`);
      else said.push(`${name} static`);
      continue;
    }
    const newest = newestGlibc(objdump("-T", file));
    if (newest !== null && compareVersions(newest, GLIBC) > 0) {
      problems.push(
        `${name} needs GLIBC_${newest}, newer than the glibc ${GLIBC} the npm packages declare ` +
          "(GLIBC in scripts/npm-packages.mjs): build on an older glibc, or raise GLIBC and the READMEs with it",
      );
    } else {
      said.push(`${name} ${newest === null ? "no glibc" : `GLIBC_${newest}`}`);
    }
  }
  if (problems.length > 0) {
    process.stderr.write(`libc:\n${problems.map((p) => `  - ${p}`).join("\n")}\n`);
    process.exit(1);
  }
  process.stderr.write(`libc: ${said.join(", ")} (glibc ${GLIBC} declared)\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
