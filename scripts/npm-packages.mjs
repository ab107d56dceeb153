#!/usr/bin/env node
// The one generator of the npm manifests under npm/: the root package @zokizuan/satori-mcp
// (JavaScript only) and one package per platform carrying the binaries of BINARIES and the
// Node addon. The version is the workspace's (Cargo.toml, [workspace.package]) and is pinned
// exactly everywhere, so a root package can only ever load binaries of its own release.
// The generated files are checked in; `--check` fails on any drift (CI runs it), and also
// when a place that builds the npm binaries (the release workflow, the workspace's build
// script, the npm proof) leaves one of them out.
//
// Usage: node scripts/npm-packages.mjs [--check]
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const scope = "@zokizuan";
const rootName = `${scope}/satori-mcp`;

// The oldest glibc the linux-gnu builds run on: the newest GLIBC_ symbol version they may
// reference. The release builds them on ubuntu-22.04 (glibc 2.35), and what Rust's standard
// library and the C code compiled in take from glibc there is versioned 2.34 at most;
// scripts/check-libc.mjs holds CI's build, the npm proof's and every release build to it. The
// launcher reads it from lib/targets.json and, on an older glibc, runs the musl package's
// static binaries or says how to install them; the platform manifests and both READMEs state
// it (`--check` holds the READMEs to it).
export const GLIBC = "2.34";

// Every platform a release builds: npm's os/cpu/libc words, the glibc the gnu builds need, and
// the Rust target triple the release workflow builds it from. The launcher reads this table
// (lib/targets.json), so the generator and the resolution at run time can never disagree.
export const TARGETS = [
  { id: "linux-x64-gnu", os: "linux", cpu: "x64", libc: "glibc", glibc: GLIBC, rust: "x86_64-unknown-linux-gnu" },
  { id: "linux-arm64-gnu", os: "linux", cpu: "arm64", libc: "glibc", glibc: GLIBC, rust: "aarch64-unknown-linux-gnu" },
  { id: "linux-x64-musl", os: "linux", cpu: "x64", libc: "musl", rust: "x86_64-unknown-linux-musl" },
  { id: "linux-arm64-musl", os: "linux", cpu: "arm64", libc: "musl", rust: "aarch64-unknown-linux-musl" },
  { id: "darwin-x64", os: "darwin", cpu: "x64", rust: "x86_64-apple-darwin" },
  { id: "darwin-arm64", os: "darwin", cpu: "arm64", rust: "aarch64-apple-darwin" },
  { id: "win32-x64-msvc", os: "win32", cpu: "x64", rust: "x86_64-pc-windows-msvc" },
  { id: "win32-arm64-msvc", os: "win32", cpu: "arm64", rust: "aarch64-pc-windows-msvc" },
];

// The programs every platform package carries, each with the crate it is built from. Staging
// (scripts/npm-stage.mjs), the manifests, the launcher's table (lib/targets.json), the root
// package's bin shims and the release archives (scripts/check-dist-config.mjs) follow this
// list, and `--check` holds every `cargo build` of the npm binaries to it.
export const BINARIES = [
  { name: "satori", crate: "satori-mcp" },
  { name: "satori-cli", crate: "satori-cli" },
  { name: "mcat", crate: "mcat" },
];
// The Node addon: the cdylib of this crate, packaged as satori.<platform>.node.
export const ADDON_CRATE = "satori-node";
// Shipped in every package, root and platform, as in the release archives: Satori's licence
// and the licences of everything compiled into the binaries and the addon (the Rust crates,
// the tree-sitter grammars, the bundled model). Staging copies them from the repository root.
export const LICENCE_FILES = ["LICENSE", "THIRD_PARTY_NOTICES"];

// The files that build the npm binaries, each with the `cargo build` commands in it.
const BUILDERS = [".github/workflows/npm.yml", "package.json", "scripts/npm-proof.sh"];
// The READMEs that tell users which glibc the gnu packages need.
const README_GLIBC = ["README.md", "npm/satori-mcp/README.md"];

function workspaceVersion() {
  const toml = fs.readFileSync(path.join(root, "Cargo.toml"), "utf8");
  const section = toml.split(/^\[workspace\.package\]$/m)[1];
  const match = section && section.match(/^version\s*=\s*"([^"]+)"/m);
  if (!match) throw new Error("Cargo.toml: no version in [workspace.package]");
  return match[1];
}

function common(version) {
  return {
    version,
    license: "MIT",
    homepage: "https://github.com/zokizuan/satori",
    repository: { type: "git", url: "git+https://github.com/zokizuan/satori.git" },
  };
}

function platformManifest(target, version) {
  const exe = target.os === "win32" ? ".exe" : "";
  return {
    name: `${rootName}-${target.id}`,
    ...common(version),
    description:
      `The ${target.rust} build of Satori (${BINARIES.map((b) => b.name).join(", ")} and the Node addon) for ${rootName}.` +
      (target.glibc ? ` Needs glibc ${target.glibc} or newer.` : ""),
    os: [target.os],
    cpu: [target.cpu],
    ...(target.libc ? { libc: [target.libc] } : {}),
    files: [...BINARIES.map((b) => `bin/${b.name}${exe}`), `satori.${target.id}.node`, ...LICENCE_FILES],
    preferUnplugged: true,
  };
}

function rootManifest(version) {
  return {
    name: rootName,
    ...common(version),
    description: "Local-first semantic code search for coding agents: the Satori MCP server, its CLI, a Node API, and mcat, a shell client for any MCP server.",
    keywords: ["mcp", "code-search", "semantic-search", "model-context-protocol"],
    // `npx -y @zokizuan/satori-mcp` runs the bin named after the package: the MCP server.
    bin: { "satori-mcp": "bin/satori.js", ...Object.fromEntries(BINARIES.map((b) => [b.name, `bin/${b.name}.js`])) },
    main: "index.js",
    types: "index.d.ts",
    // Each condition has the types of its own module format: TypeScript (node16, nodenext,
    // bundler) reads `types` under the condition it resolved, ESM types for `import`.
    exports: {
      ".": {
        import: { types: "./index.d.mts", default: "./index.mjs" },
        require: { types: "./index.d.ts", default: "./index.js" },
      },
      "./package.json": "./package.json",
    },
    files: ["bin/", "lib/", "index.js", "index.mjs", "index.d.ts", "index.d.mts", ...LICENCE_FILES],
    engines: { node: ">=18" },
    optionalDependencies: Object.fromEntries(TARGETS.map((t) => [`${rootName}-${t.id}`, version])),
  };
}

function outputs() {
  const version = workspaceVersion();
  const files = new Map();
  const json = (value) => `${JSON.stringify(value, null, 2)}\n`;
  files.set("npm/satori-mcp/package.json", json(rootManifest(version)));
  files.set(
    "npm/satori-mcp/lib/targets.json",
    json({
      package: rootName,
      version,
      binaries: BINARIES.map((b) => b.name),
      targets: TARGETS.map(({ id, os, cpu, libc, glibc }) => ({ id, os, cpu, libc: libc ?? null, glibc: glibc ?? null })),
    }),
  );
  for (const target of TARGETS) {
    files.set(`npm/${target.id}/package.json`, json(platformManifest(target, version)));
  }
  return files;
}

/**
 * The crates the `cargo build` commands of a file build (`-p`/`--package` names; "*" for
 * `--workspace`). Comment lines are skipped; in package.json, only the scripts are read.
 */
export function builtCrates(rel, text) {
  const lines = rel.endsWith(".json")
    ? Object.values(JSON.parse(text).scripts ?? {})
    : text.replace(/\\\n/g, " ").split("\n").filter((line) => !/^\s*#/.test(line));
  const crates = new Set();
  for (const line of lines) {
    // A command ends at a newline or a shell operator.
    for (const [command] of line.matchAll(/\bcargo build\b[^\n&|;]*/g)) {
      if (/\s--(workspace|all)(?=\s|$)/.test(command)) crates.add("*");
      for (const m of command.matchAll(/\s(?:-p|--package)(?:\s+|=)([\w-]+)/g)) crates.add(m[1]);
    }
  }
  return crates;
}

function main() {
  const check = process.argv.includes("--check");
  const drift = [];
  for (const [rel, text] of outputs()) {
    const file = path.join(root, rel);
    const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
    if (current === text) continue;
    if (check) {
      drift.push(rel);
    } else {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, text);
      process.stderr.write(`wrote ${rel}\n`);
    }
  }
  const problems = [];
  // The release workflow builds every target of the table, and nothing else.
  const workflow = fs.readFileSync(path.join(root, ".github/workflows/npm.yml"), "utf8");
  const matrix = [...workflow.matchAll(/platform: ([\w-]+), target: ([\w-]+)/g)].map((m) => `${m[1]}=${m[2]}`);
  const table = TARGETS.map((t) => `${t.id}=${t.rust}`);
  if (JSON.stringify([...matrix].sort()) !== JSON.stringify([...table].sort())) {
    problems.push(`.github/workflows/npm.yml builds ${matrix.join(", ")}; the target table has ${table.join(", ")}`);
  }
  // Whatever builds the npm binaries builds all of them: staging refuses a missing one.
  const wanted = [...BINARIES.map((b) => b.crate), ADDON_CRATE];
  for (const rel of BUILDERS) {
    const built = builtCrates(rel, fs.readFileSync(path.join(root, rel), "utf8"));
    const missing = wanted.filter((crate) => !built.has(crate) && !built.has("*"));
    if (missing.length > 0) {
      problems.push(`${rel} does not build ${missing.join(", ")}: the npm packages carry ${wanted.join(", ")} (BINARIES, ADDON_CRATE)`);
    }
  }
  // One shim per binary in the root package, and none for a binary it does not carry.
  const shims = fs
    .readdirSync(path.join(root, "npm/satori-mcp/bin"))
    .filter((file) => file.endsWith(".js"))
    .map((file) => file.slice(0, -3));
  const names = BINARIES.map((b) => b.name);
  if (JSON.stringify([...shims].sort()) !== JSON.stringify([...names].sort())) {
    problems.push(`npm/satori-mcp/bin has shims for ${shims.join(", ")}; BINARIES has ${names.join(", ")}`);
  }
  // The READMEs give the glibc the gnu packages need, and no other.
  for (const rel of README_GLIBC) {
    const said = [...fs.readFileSync(path.join(root, rel), "utf8").matchAll(/glibc (\d+(?:\.\d+)+) or newer/g)].map((m) => m[1]);
    const wrong = said.filter((version) => version !== GLIBC);
    if (said.length === 0 || wrong.length > 0) {
      problems.push(`${rel} says glibc ${said.length === 0 ? "nothing" : wrong.join(", ")}; the gnu packages need glibc ${GLIBC} or newer (GLIBC)`);
    }
  }
  if (problems.length > 0) {
    process.stderr.write(`${problems.join("\n")}\n`);
    process.exit(1);
  }
  if (drift.length > 0) {
    process.stderr.write(
      `npm manifests differ from scripts/npm-packages.mjs: ${drift.join(", ")}\n` +
        "run `node scripts/npm-packages.mjs` and commit the result\n",
    );
    process.exit(1);
  }
}

// Imported by scripts/check-dist-config.mjs for the target table; run as a script, it writes.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) main();
