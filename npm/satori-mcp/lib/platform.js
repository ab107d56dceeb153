// Finding this machine's platform package and the files in it.
//
// The platform is `<os>-<cpu>` plus the C library on Linux (`-gnu` or `-musl`) and `-msvc`
// on Windows: the ids of lib/targets.json, which scripts/npm-packages.mjs generates with the
// platform packages' manifests. On glibc Linux the binaries may also come from the musl
// package: its binaries link their C library statically and run on any Linux, which is the
// way out where glibc is older than the gnu build needs (the table's `glibc`). Its addon
// cannot stand in: it loads into Node, which runs on glibc. Nothing here writes to stdout:
// the server's stdout is MCP.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

const table = require("./targets.json");

/** The package manager's name for a package of this release. */
const ROOT_PACKAGE = table.package;
const VERSION = table.version;

let muslCache;

/** Whether this Linux runs on musl (Alpine) rather than glibc, asked the cheapest way first. */
function isMusl() {
  if (muslCache !== undefined) return muslCache;
  muslCache = detectMusl();
  return muslCache;
}

function detectMusl() {
  // The dynamic loader's script names its C library.
  try {
    const ldd = fs.readFileSync("/usr/bin/ldd", "utf8");
    if (ldd.includes("musl")) return true;
    if (ldd.includes("GNU C Library") || ldd.includes("glibc")) return false;
  } catch {
    // No ldd script: ask Node itself.
  }
  try {
    const report = process.report && process.report.getReport();
    if (report && report.header && report.header.glibcVersionRuntime) return false;
    const shared = (report && report.sharedObjects) || [];
    if (shared.some((file) => file.includes("libc.musl-") || file.includes("ld-musl-"))) return true;
  } catch {
    // Reports can be disabled; fall through to ldd.
  }
  try {
    const out = execFileSync("ldd", ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    return out.includes("musl");
  } catch (error) {
    // musl's ldd prints its version to stderr and exits 1.
    return String(error.stderr || "").includes("musl");
  }
}

let glibcCache;

/** The glibc this Node runs on ("2.35"), as Node's report gives it; null on another C library. */
function glibcRuntime() {
  if (glibcCache !== undefined) return glibcCache;
  glibcCache = null;
  try {
    const report = process.report && process.report.getReport();
    glibcCache = (report && report.header && report.header.glibcVersionRuntime) || null;
  } catch {
    // Reports can be disabled: then assume the gnu build runs, as the loader will tell if not.
  }
  return glibcCache;
}

/** Whether version `have` ("2.31") is older than `need` ("2.34"). */
function olderThan(have, need) {
  const a = have.split(".").map(Number);
  const b = need.split(".").map(Number);
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    if ((a[i] || 0) !== (b[i] || 0)) return (a[i] || 0) < (b[i] || 0);
  }
  return false;
}

/** The platform id of this machine, whether or not a release is built for it. */
function platformId(platform = process.platform, arch = process.arch) {
  if (platform === "linux") return `linux-${arch}-${isMusl() ? "musl" : "gnu"}`;
  if (platform === "win32") return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** An `Error` whose `code` is the CLI token for a configuration problem. */
function usageError(message) {
  const error = new Error(message);
  error.code = "E_USAGE";
  return error;
}

// What to do on a platform with no build, for each entry point: build from source and name
// what was built. The Node API needs its addon as well as the server it starts.
const FROM_SOURCE = {
  satori: "Build it from source (cargo build --release -p satori-mcp) and set SATORI_BINARY to target/release/satori.",
  "satori-cli":
    "Build it from source (cargo build --release -p satori-mcp -p satori-cli) and set SATORI_CLI_BINARY " +
    "to target/release/satori-cli and SATORI_BINARY to target/release/satori, the server it starts.",
  mcat: "Build it from source (cargo build --release -p mcat) and set MCAT_BINARY to target/release/mcat.",
  node:
    "The Node API needs its native addon: build it from source (cargo build --release -p satori-mcp -p satori-node), " +
    "copy target/release/libsatori_node.so (libsatori_node.dylib on macOS, satori_node.dll on Windows) " +
    "to a file named satori.node, and set SATORI_NODE_ADDON to that file and SATORI_BINARY to target/release/satori.",
};

/** The name a message gives an entry point. */
function entryName(entry) {
  return entry === "node" ? "the Node API" : entry;
}

/** The directory of the installed package `name`, or null. */
function installedDir(name) {
  try {
    return path.dirname(require.resolve(`${name}/package.json`));
  } catch {
    return null;
  }
}

/**
 * The directory of the platform package to take `entry`'s files from (`satori`, `satori-cli`,
 * `mcat`, or `node` for the Node API's server), or, with `addon`, the Node addon's, or an
 * `Error` (code `E_USAGE`) that says what to install, or, on a platform with no build, how to
 * run `entry` all the same.
 */
function platformDir(entry = "satori", addon = false) {
  const id = platformId();
  const target = table.targets.find((t) => t.id === id);
  if (!target) {
    throw usageError(
      `${ROOT_PACKAGE} has no build for this platform (${id}), so ${entryName(entry)} cannot run from it. ` +
        `Builds exist for: ${table.targets.map((t) => t.id).join(", ")}. ${FROM_SOURCE[entry]}`,
    );
  }
  const have = target.glibc ? glibcRuntime() : null;
  const tooOld = have !== null && olderThan(have, target.glibc);
  const name = `${ROOT_PACKAGE}-${id}`;
  if (!tooOld) {
    const dir = installedDir(name);
    if (dir) return dir;
  }
  const musl = !addon && target.glibc ? table.targets.find((t) => t.os === "linux" && t.cpu === target.cpu && t.libc === "musl") : null;
  const muslName = musl ? `${ROOT_PACKAGE}-${musl.id}` : null;
  const muslDir = muslName && installedDir(muslName);
  if (muslDir) return muslDir;
  if (tooOld) {
    const why = `the ${id} build needs glibc ${target.glibc} or newer, and this system has glibc ${have}.`;
    if (addon) {
      throw usageError(
        `${ROOT_PACKAGE}: the Node API cannot run here: ${why} The addon of the musl build cannot load into this Node, ` +
          `which runs on glibc. ${FROM_SOURCE.node}`,
      );
    }
    throw usageError(
      `${ROOT_PACKAGE}: ${entryName(entry)} cannot run here: ${why} The musl build, ${muslName}, runs on any Linux. ` +
        `Add it where ${ROOT_PACKAGE} is installed: \`npm install --force ${muslName}@${VERSION}\` ` +
        "(add -g for a global install; on glibc npm installs a musl package only with --force). " +
        `Or install ${ROOT_PACKAGE} with the musl build in place of the gnu one (npm 10.3 or newer): ` +
        `\`npm install -g --libc=musl ${ROOT_PACKAGE}@${VERSION}\`, and run satori-mcp in place of npx; ` +
        "for a project, put libc=musl in its .npmrc and run npm install.",
    );
  }
  throw usageError(
    `${ROOT_PACKAGE}: the platform package ${name} is not installed. ` +
      `It is an optional dependency of ${ROOT_PACKAGE}@${VERSION}; it is missing when optional ` +
      "dependencies were omitted (--omit=optional, --no-optional) or the lockfile was made on another platform. " +
      `Install it with: npm install ${name}@${VERSION}`,
  );
}

/** Path of a binary (`satori`, `satori-cli` or `mcat`) in the platform package. */
function packagedBinary(name, entry = name) {
  const exe = process.platform === "win32" ? ".exe" : "";
  return path.join(platformDir(entry), "bin", `${name}${exe}`);
}

/** Path of the Node addon in the platform package. */
function packagedAddon() {
  return path.join(platformDir("node", true), `satori.${platformId()}.node`);
}

/**
 * Give a packaged binary its executable bit back when a package manager dropped it (npm keeps
 * the tarball's mode; some tools extract everything 0644). Failing to fix it is not fatal:
 * starting the binary then reports the real error.
 */
function ensureExecutable(file) {
  if (process.platform === "win32") return;
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    try {
      fs.chmodSync(file, 0o755);
    } catch {
      // Read-only install: spawn's EACCES will say so.
    }
  }
}

module.exports = {
  ROOT_PACKAGE,
  VERSION,
  platformId,
  platformDir,
  packagedBinary,
  packagedAddon,
  ensureExecutable,
  usageError,
};
