#!/bin/sh
# The client side of the MCP conformance suite (@modelcontextprotocol/conformance, client
# mode): the harness runs this script with the scenario's server URL as the last argument and
# the scenario's name in MCP_CONFORMANCE_SCENARIO (and its context, JSON, in
# MCP_CONFORMANCE_CONTEXT); each scenario maps to the mcat commands a user would run.
# MCAT names the binary (default: mcat on PATH).
set -eu
url=""
for a in "$@"; do url="$a"; done
mcat="${MCAT:-mcat}"
here="$(cd "$(dirname "$0")" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
scenario="${MCP_CONFORMANCE_SCENARIO:-}"
context="${MCP_CONFORMANCE_CONTEXT:-}"
opener="python3 $here/../fixtures/follow.py"

# A field of the scenario's context, or nothing.
ctx() {
  [ -n "$context" ] || return 0
  python3 -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$context" "$1"
}

authorize() {
  set -- auth start "$url" -k "$dir/token.json" --state "$dir/auth.json" --wait --open-command "$opener" --timeout 20 "$@"
  id="$(ctx client_id)"
  secret="$(ctx client_secret)"
  if [ -n "$id" ]; then set -- "$@" --client-id "$id"; fi
  if [ -n "$secret" ]; then
    printf '{"client_secret": "%s"}' "$secret" > "$dir/secret.json"
    set -- "$@" --client-secret "json://$dir/secret.json"
  fi
  "$mcat" "$@"
}

# Runs an mcat command; a 403 for insufficient scope names the scope, so authorize again
# with it, once (what a user does with that error), and run the command again.
stepping() {
  if out="$("$mcat" "$@")"; then printf '%s\n' "$out"; return 0; fi
  scope="$(printf '%s' "$out" | sed -n "s/.*needs '\\([^']*\\)'.*/\\1/p")"
  if [ -z "$scope" ]; then printf '%s\n' "$out"; return 1; fi
  authorize -o --scope "$scope" >&2
  "$mcat" "$@"
}

case "$scenario" in
  initialize)
    "$mcat" init "$url" -o "$dir/s.json"
    ;;
  sse-retry)
    "$mcat" init "$url" -o "$dir/s.json"
    "$mcat" tool call test_reconnection -s "$dir/s.json"
    ;;
  tools_call)
    "$mcat" init "$url" -o "$dir/s.json"
    "$mcat" tool call add_numbers -i '{a: 5, b: 3}' -s "$dir/s.json"
    ;;
  elicitation-sep1034-client-defaults)
    # Nobody is there to answer the server's form: accept it with the schema's defaults.
    "$mcat" init "$url" -o "$dir/s.json" --elicit accept-defaults
    "$mcat" tool call test_client_elicitation_defaults -s "$dir/s.json"
    ;;
  auth/basic-cimd)
    # The client's metadata document, as its publisher would host it.
    authorize --client-metadata-url https://conformance-test.local/client-metadata.json
    "$mcat" init "$url" -k "$dir/token.json" -o "$dir/s.json"
    "$mcat" tool list -s "$dir/s.json"
    ;;
  auth/client-credentials-basic)
    authorize --grant client-credentials
    "$mcat" init "$url" -k "$dir/token.json" -o "$dir/s.json"
    "$mcat" tool list -s "$dir/s.json"
    ;;
  auth/client-credentials-jwt)
    # The client's private key, as its operator would keep it: a PEM file.
    ctx private_key_pem > "$dir/client-key.pem"
    authorize --grant client-credentials --client-key "$dir/client-key.pem"
    "$mcat" init "$url" -k "$dir/token.json" -o "$dir/s.json"
    "$mcat" tool list -s "$dir/s.json"
    ;;
  auth/*)
    authorize
    "$mcat" init "$url" -k "$dir/token.json" -o "$dir/s.json"
    stepping tool list -s "$dir/s.json" > "$dir/tools.json"
    cat "$dir/tools.json"
    # A tool, when the server offers one, exercises the token on a call too.
    tool="$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["result"]["tools"]; print(t[0]["name"] if t else "")' "$dir/tools.json")"
    if [ -n "$tool" ]; then stepping tool call "$tool" -s "$dir/s.json"; fi
    ;;
  *)
    "$mcat" init "$url" -o "$dir/s.json"
    "$mcat" tool list -s "$dir/s.json"
    ;;
esac
