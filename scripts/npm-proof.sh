#!/usr/bin/env bash
# The npm proof: the packages as a user gets them. Builds this machine's platform package
# (debug builds by default: CI already has them; SATORI_NPM_PROFILE=release for release
# builds) and the root package, packs both with `npm pack`, installs the two tarballs into a
# temporary project with no registry access for our own packages (`--offline`: a missing
# package of ours fails instead of being fetched), then runs tests/npm/*.test.mjs against that
# project with `node --test`. The MCP SDK and TypeScript come from the npm registry.
#
# Usage: scripts/npm-proof.sh   (SATORI_NPM_PROFILE=release, SATORI_NPM_PROOF_DIR=<dir to keep>)
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${SATORI_NPM_PROFILE:-debug}"
target_dir="${CARGO_TARGET_DIR:-target}"
# Exact versions of what the proof takes from the registry (one list, shared with .ci/run).
sdk="$(node -p 'require("./tests/npm/registry-pins.json").sdk')"
typescript="$(node -p 'require("./tests/npm/registry-pins.json").typescript')"

node scripts/npm-packages.mjs --check

release=()
[ "$profile" = release ] && release=(--release)
cargo build --locked "${release[@]}" --bins -p satori-mcp -p satori-cli -p mcat
cargo build --locked "${release[@]}" --lib -p satori-node
# What the packed binaries and addon ask of the C library is what the packages declare.
node scripts/check-libc.mjs --profile "$profile" --target-dir "$target_dir" --addon
node scripts/npm-stage.mjs --profile "$profile" --target-dir "$target_dir"
platform="$(node -p 'require("./npm/satori-mcp/lib/platform").platformId()')"

# SATORI_NPM_PROOF_DIR keeps the tarballs and the project there (bench/npx_startup.mjs uses it).
if [ -n "${SATORI_NPM_PROOF_DIR:-}" ]; then
  work="$SATORI_NPM_PROOF_DIR"
  rm -rf "$work" && mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi
npm pack --silent --pack-destination "$work" ./npm/satori-mcp "./npm/$platform" >/dev/null
echo "packed: $(cd "$work" && ls -l -- *.tgz | awk '{print $5, $9}' | paste -sd ' ' -)"

project="$work/project"
mkdir "$project"
printf '{ "name": "satori-npm-proof", "private": true }\n' >"$project/package.json"
(
  cd "$project"
  npm install --no-audit --no-fund --loglevel=error --save-exact "$sdk" "$typescript"
  npm install --no-audit --no-fund --loglevel=error --offline "$work"/zokizuan-satori-mcp-*.tgz
)

SATORI_NPM_PROJECT="$project" node --test --test-concurrency=1 tests/npm/
