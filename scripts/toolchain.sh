#!/usr/bin/env bash
# Makes the toolchain pinned in rust-toolchain.toml available, so that cargo runs in this
# repository (rustup refuses to while the pinned release is missing under its own name).
# Where an installed toolchain already is that exact release — a machine with one toolchain,
# installed as `stable`, and no network for rustup — it is registered under the pinned name;
# otherwise rustup installs the release. .ci/run calls this first.
# Usage: scripts/toolchain.sh
set -euo pipefail
cd "$(dirname "$0")/.."

pinned="$(sed -n 's/^channel = "\(.*\)"$/\1/p' rust-toolchain.toml)"
installed="$(rustup toolchain list | awk '{print $1}')"
if grep -q "^$pinned-" <<<"$installed"; then
  exit 0
fi
for toolchain in $installed; do
  version="$(rustup run "$toolchain" rustc -vV 2>/dev/null || true)"
  if [ "$(sed -n 's/^release: //p' <<<"$version")" = "$pinned" ]; then
    host="$(sed -n 's/^host: //p' <<<"$version")"
    sysroot="$(rustup run "$toolchain" rustc --print sysroot)"
    ln -s "$sysroot" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$pinned-$host"
    echo "toolchain $toolchain is $pinned: registered under that name" >&2
    exit 0
  fi
done
rustup toolchain install "$pinned" --profile minimal --component rustfmt,clippy
