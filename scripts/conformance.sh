#!/bin/sh
# Runs the MCP conformance suite (@modelcontextprotocol/conformance 0.1.11, the last version
# that runs on Node 20) against our two MCP programs, each with a baseline that lists the
# scenarios expected to fail and why:
#
#   scripts/conformance.sh client MCAT_BINARY     every client scenario against mcat, through
#                                                 crates/mcat/tests/conformance/adapter.sh
#   scripts/conformance.sh server SATORI_BINARY   every server scenario against `satori --http`
#                                                 on a free loopback port, with a fresh home
#
# Needs Node and npm. The suite is installed once under $TMPDIR.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="${1:?usage: conformance.sh client|server BINARY}"
binary="$(cd "$(dirname "${2:?usage: conformance.sh client|server BINARY}")" && pwd)/$(basename "$2")"
work="${TMPDIR:-/tmp}/satori-conformance-0.1.11"
mkdir -p "$work"
if [ ! -x "$work/node_modules/.bin/conformance" ]; then
  # The suite's scenario servers are written against @modelcontextprotocol/sdk 1.25.2, the
  # release it was published with; later SDKs refuse their reuse of one Server for many
  # stateless requests ("Already connected to a transport"), which would fail tools_call
  # for any client. So the SDK is pinned to that release.
  cat > "$work/package.json" <<'JSON'
{
  "name": "satori-conformance",
  "private": true,
  "dependencies": { "@modelcontextprotocol/conformance": "0.1.11" },
  "overrides": { "@modelcontextprotocol/sdk": "1.25.2" }
}
JSON
  (cd "$work" && npm install --no-audit --no-fund --silent)
fi
conformance="$work/node_modules/.bin/conformance"

case "$mode" in
client)
  export MCAT="$binary"
  cd "$work"
  exec "$conformance" client --command "$root/crates/mcat/tests/conformance/adapter.sh" \
    --suite all --expected-failures "$root/crates/mcat/tests/conformance/baseline.yml" \
    --timeout 60000
  ;;
server)
  home="$(mktemp -d)"
  log="$home/satori.log"
  # Port 0: the server picks a free port and names the address it serves on stderr.
  SATORI_HOME="$home/satori" "$binary" --http 127.0.0.1:0 2>"$log" &
  pid=$!
  trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$home"' EXIT
  url=""
  for _ in $(seq 1 300); do
    url="$(sed -n 's/^satori: serving MCP at \(http:[^ ]*\).*/\1/p' "$log" | head -n 1)"
    [ -n "$url" ] && break
    kill -0 $pid 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "conformance: satori did not start serving" >&2; cat "$log" >&2; exit 1; }
  case "$url" in */mcp) ;; *) url="${url%/}/mcp" ;; esac
  cd "$work"
  "$conformance" server --url "$url" --suite all \
    --expected-failures "$root/crates/satori-mcp/tests/conformance/baseline.yml"
  ;;
*)
  echo "usage: conformance.sh client|server BINARY" >&2
  exit 2
  ;;
esac
