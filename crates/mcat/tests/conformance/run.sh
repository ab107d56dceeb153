#!/bin/sh
# Runs every client scenario of the MCP conformance suite against mcat, through adapter.sh,
# with baseline.yml listing the expected failures and why. Usage: run.sh MCAT_BINARY
# (needs Node and npm: the suite is @modelcontextprotocol/conformance 0.1.11, the last
# version that runs on Node 20).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
MCAT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
export MCAT
work="${TMPDIR:-/tmp}/mcat-conformance"
mkdir -p "$work"
if [ ! -x "$work/node_modules/.bin/conformance" ]; then
  npm install --prefix "$work" --no-audit --no-fund --silent @modelcontextprotocol/conformance@0.1.11
fi
cd "$work"
exec ./node_modules/.bin/conformance client --command "$here/adapter.sh" --suite all \
  --expected-failures "$here/baseline.yml" --timeout 60000
