#!/usr/bin/env bash
# Installs `dist` (crate cargo-dist), the release tool `dist-workspace.toml` is written for, from
# crates.io. It is built from source (about a quarter of an hour on two cores), so CI does not
# install it: `.ci/run` runs `dist plan` whenever it finds it installed and otherwise checks
# `dist-workspace.toml` statically (scripts/check-dist-config.mjs).
#
# After installing:
#   dist plan                                   # the release: targets, archives, installers
#   dist build --artifacts=local --target "$(rustc -vV | sed -n 's/^host: //p')"
#
# Usage: scripts/install-dist.sh   (DIST_VERSION overrides the version)
set -euo pipefail

# Must match `cargo-dist-version` in dist-workspace.toml.
version="${DIST_VERSION:-0.34.0}"

# `dist --version` prints "cargo-dist <version>".
installed="$(dist --version 2>/dev/null || true)"
if [ "$installed" = "cargo-dist $version" ]; then
  echo "$installed is already installed" >&2
  exit 0
fi
cargo install --locked cargo-dist --version "$version"
