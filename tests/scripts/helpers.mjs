// Shared set-up of the checks of the release scripts: a copy of the repository's files (those
// git tracks or would track) in a temporary directory, where a case may edit what the script
// reads before running it, so a broken configuration is tried without touching this checkout.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Copy the files under `paths` (repository-relative) that git tracks or does not ignore. */
export function copyRepo(paths) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "satori-scripts-"));
  process.on("exit", () => fs.rmSync(dir, { recursive: true, force: true }));
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...paths], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  for (const rel of listed.split("\0").filter(Boolean)) {
    const from = path.join(repoRoot, rel);
    // A tracked file deleted in this checkout is not part of it.
    if (!fs.existsSync(from)) continue;
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.copyFileSync(from, path.join(dir, rel));
  }
  return dir;
}

/** Replace `from` (which must occur) by `to` in a file of the copy. */
export function edit(dir, rel, from, to) {
  const file = path.join(dir, rel);
  const text = fs.readFileSync(file, "utf8");
  if (!text.includes(from)) throw new Error(`${rel} does not contain ${JSON.stringify(from)}`);
  fs.writeFileSync(file, text.replace(from, to));
}

/** Run `node <script> ...args` in the copy; never through a shell. */
export function runNode(dir, script, args = []) {
  const result = spawnSync(process.execPath, [path.join(dir, script), ...args], { cwd: dir, encoding: "utf8", timeout: 120_000 });
  if (result.error) throw result.error;
  return result;
}
