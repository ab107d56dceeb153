#!/bin/sh
# Runs every client scenario of the MCP conformance suite against mcat, through adapter.sh,
# with baseline.yml listing the expected failures and why. Usage: run.sh MCAT_BINARY
# (needs Node and npm: the suite is @modelcontextprotocol/conformance 0.1.11, the last
# version that runs on Node 20).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
MCAT="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
export MCAT
work="${TMPDIR:-/tmp}/mcat-conformance-0.1.11"
mkdir -p "$work"
if [ ! -x "$work/node_modules/.bin/conformance" ]; then
  # The suite's scenario servers are written against @modelcontextprotocol/sdk 1.25.2, the
  # release it was published with; later SDKs refuse their reuse of one Server for many
  # stateless requests ("Already connected to a transport"), which would fail tools_call
  # for any client. So the SDK is pinned to that release.
  cat > "$work/package.json" <<'JSON'
{
  "name": "mcat-conformance",
  "private": true,
  "dependencies": { "@modelcontextprotocol/conformance": "0.1.11" },
  "overrides": { "@modelcontextprotocol/sdk": "1.25.2" }
}
JSON
  (cd "$work" && npm install --no-audit --no-fund --silent)
fi
cd "$work"
exec ./node_modules/.bin/conformance client --command "$here/adapter.sh" --suite all \
  --expected-failures "$here/baseline.yml" --timeout 60000
