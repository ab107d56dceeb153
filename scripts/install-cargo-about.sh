#!/usr/bin/env bash
# Installs cargo-about, which renders THIRD_PARTY_NOTICES (about.toml, about.hbs), from
# crates.io. Only regenerating the file needs it: `node scripts/third-party-notices.mjs
# --check` compares the file with the dependency graph without it, and that is what `.ci/run`
# runs; where cargo-about is installed, `.ci/run` also renders the file anew and compares it.
#
# After installing:
#   node scripts/third-party-notices.mjs                        # writes THIRD_PARTY_NOTICES
#   node scripts/third-party-notices.mjs --check --regenerate   # fails when it drifts
#
# Usage: scripts/install-cargo-about.sh   (CARGO_ABOUT_VERSION overrides the version)
set -euo pipefail

# The newest release; it builds with the toolchain in rust-toolchain.toml. The binary needs
# the `cli` feature, which is not on by default.
version="${CARGO_ABOUT_VERSION:-0.9.3}"

if installed="$(cargo about --version 2>/dev/null)" && [ "$installed" = "cargo-about $version" ]; then
  echo "$installed is already installed" >&2
  exit 0
fi
cargo install --locked --features cli "cargo-about@$version"
