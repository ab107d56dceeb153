#!/usr/bin/env bash
# Builds Satori and runs its main job on the embedded default: index a repository, then
# search it. Usage: scripts/quickstart.sh [repository] [query]
# Defaults: this repository, and a natural-language question about it.
set -euo pipefail
cd "$(dirname "$0")/.."

repo="$(cd "${1:-.}" && pwd)"
query="${2:-where is the stdout guard installed before the server starts}"

cargo build --release --locked -p satori-mcp -p satori-cli >&2

# A private state directory keeps the demo away from your real ~/.satori.
export SATORI_HOME="${SATORI_HOME:-$PWD/target/quickstart-home}"
cli=./target/release/satori-cli
# key=value pairs to a JSON object (digits become numbers).
args() { python3 -c 'import json,sys; print(json.dumps({k: int(v) if v.isdigit() else v for k, v in (a.split("=", 1) for a in sys.argv[1:])}))' "$@"; }

echo "== indexing $repo" >&2
"$cli" tool call manage_index --args-json "$(args action=create path="$repo")" >/dev/null
echo "== search: $query" >&2
"$cli" tool call search_codebase --args-json "$(args path="$repo" query="$query" limit=5)" \
  | python3 -c '
import json, sys
result = json.load(sys.stdin)
env = result.get("structuredContent") or json.loads(result["content"][0]["text"])
for r in env.get("results", []):
    span, label = r["span"], r.get("symbolLabel") or ""
    print("%8s  %s:%d-%d  %s" % (r["score"], r["file"], span["startLine"], span["endLine"], label))
    for line in (r.get("preview") or "").splitlines()[:3]:
        print("          " + line)
'
