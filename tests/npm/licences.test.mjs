// Every installed package, the root package and this platform's, carries Satori's LICENSE
// and THIRD_PARTY_NOTICES, the same bytes as the repository's, and lists them in its manifest.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { project, repoRoot } from "./helpers.mjs";

const scope = path.join(project, "node_modules", "@zokizuan");
const packages = fs.readdirSync(scope).filter((name) => name === "satori-mcp" || name.startsWith("satori-mcp-"));

test("the root package and a platform package are installed", () => {
  assert.ok(packages.includes("satori-mcp"), packages.join(", "));
  assert.equal(packages.length, 2, packages.join(", "));
});

for (const name of packages) {
  test(`@zokizuan/${name} ships LICENSE and THIRD_PARTY_NOTICES`, () => {
    const dir = path.join(scope, name);
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    for (const file of ["LICENSE", "THIRD_PARTY_NOTICES"]) {
      assert.ok(manifest.files.includes(file), `${file} is not in the files of ${name}`);
      const installed = path.join(dir, file);
      assert.ok(fs.existsSync(installed), `${installed} is missing`);
      assert.equal(fs.readFileSync(installed, "utf8"), fs.readFileSync(path.join(repoRoot, file), "utf8"), `${name}/${file}`);
    }
    assert.match(fs.readFileSync(path.join(dir, "THIRD_PARTY_NOTICES"), "utf8"), /all-MiniLM-L6-v2[\s\S]*tree-sitter-rust /);
  });
}
