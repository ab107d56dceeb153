#!/usr/bin/env bash
# Type-checks the workspace for the release targets this machine cannot build for: Windows
# (MSVC) and macOS. `cargo check` compiles no Rust to machine code, but the build scripts of
# the C parts (tree-sitter grammars, aws-lc-sys, zstd) still run a C compiler and an archiver
# for the target, which this machine lacks; stand-ins that only create the files they are asked
# for let those build scripts finish, so every line of Rust is checked for the target, its
# `cfg`s included. Nothing is linked or run, so this proves the code compiles there, not that
# it works there.
#
# Usage: scripts/cross-check.sh [TARGET ...]   (default: the Windows and macOS release targets)
set -euo pipefail
cd "$(dirname "$0")/.."

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-pc-windows-msvc aarch64-apple-darwin)

stubs="$(mktemp -d)"
trap 'rm -rf "$stubs"' EXIT
# The compiler stand-in: creates the object named by -o, /Fo or -Fo, empty.
cat >"$stubs/cc" <<'PY'
#!/usr/bin/env python3
import sys
args = sys.argv[1:]
for i, a in enumerate(args):
    out = None
    if a == "-o" and i + 1 < len(args):
        out = args[i + 1]
    elif a[:3] in ("/Fo", "-Fo") and len(a) > 3:
        out = a[3:]
    if out:
        open(out, "wb").close()
PY
# The archiver stand-in: creates the archive named by /OUT: (-out:) or as ar's first file argument.
cat >"$stubs/ar" <<'PY'
#!/usr/bin/env python3
import sys
args = sys.argv[1:]
outs = [a[5:] for a in args if a.lower().startswith(("/out:", "-out:"))]
if not outs:
    files = [a for a in args[1:] if not a.startswith("-")]
    outs = files[:1]
for out in outs:
    open(out, "wb").close()
PY
chmod +x "$stubs/cc" "$stubs/ar"

for target in "${targets[@]}"; do
  if ! rustup target list --installed | grep -qx "$target" && ! rustup target add "$target"; then
    # The standard library of a target comes from rustup's server, which a machine limited to
    # the package registries may not reach: say so rather than fail the whole run.
    echo "skipped $target: rustup could not install its standard library"
    continue
  fi
  key="${target//-/_}"
  echo "== cargo check --workspace --lib --bins --target $target"
  env "CC_$key=$stubs/cc" "CXX_$key=$stubs/cc" "AR_$key=$stubs/ar" \
    AWS_LC_SYS_PREBUILT_NASM=1 \
    cargo check --workspace --lib --bins --locked --target "$target"
done
