#!/usr/bin/env bash
# Runs every fuzz target (crates/satori-fuzz, libFuzzer wrappers in fuzz/) for SECONDS each,
# coverage-guided, on nightly Rust with cargo-fuzz (installed here when missing). Not part of
# every CI run: tests/targets.rs of satori-fuzz replays the seeds, the regressions and seeded
# mutations on stable there.
#
# New inputs go to a working corpus outside the repository (the seeds in fuzz/corpus/ are
# read, never written). An input that crashes a target is copied to
# fuzz/regressions/<target>/, where the stable test replays it from then on; the script then
# fails. Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 s, every target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
cargo_fuzz_version="0.13.1"
if ! cargo fuzz --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
  # Built by the pinned stable toolchain: its locked dependencies predate what nightly
  # rejects; only the fuzzing itself needs nightly.
  cargo install --locked cargo-fuzz --version "$cargo_fuzz_version"
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^satori')
fi
work="${SATORI_FUZZ_WORK:-${TMPDIR:-/tmp}/satori-fuzz}"
crashed=()
failed=()
for target in "${targets[@]}"; do
  rm -rf "$work/artifacts/$target"
  mkdir -p "$work/corpus/$target" "$work/artifacts/$target"
  echo "== $target: ${seconds}s" >&2
  ok=1
  cargo +nightly fuzz run --fuzz-dir fuzz "$target" "$work/corpus/$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -artifact_prefix="$work/artifacts/$target/" -print_final_stats=1 || ok=0
  found=0
  for artifact in "$work/artifacts/$target"/*; do
    [ -f "$artifact" ] || continue
    found=1
    mkdir -p "fuzz/regressions/$target"
    cp "$artifact" "fuzz/regressions/$target/"
    echo "fuzz: $target crashed on $(basename "$artifact"): copied to fuzz/regressions/$target/" >&2
  done
  if [ "$found" = 1 ]; then
    crashed+=("$target")
  elif [ "$ok" = 0 ]; then
    failed+=("$target")
  fi
done
if [ ${#crashed[@]} -gt 0 ] || [ ${#failed[@]} -gt 0 ]; then
  [ ${#crashed[@]} -gt 0 ] && echo "fuzz: crashes in ${crashed[*]}" >&2
  [ ${#failed[@]} -gt 0 ] && echo "fuzz: could not build or run ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no crash in ${targets[*]} (${seconds}s each)" >&2
