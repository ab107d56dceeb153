#!/usr/bin/env python3
"""The navigation walk an agent makes, through `satori-cli` (one process per call, as a shell
user pays it): index a repository, search it, take the first result with a call-graph
handle, ask for its callers two steps out, then open the symbol with read_file.

Usage: bench/nav_walk.py --cli target/release/satori-cli --home DIR \
         --walk 'LANG=DIR::QUERY' [--walk ...]
Prints one JSON summary per walk (the commands run, the symbol, callers found, the lines
opened) and exits non-zero if any step fails.
"""
import argparse, json, os, subprocess, sys


def run(cli, env, *args):
    p = subprocess.run([cli, *args], capture_output=True, text=True, env=env)
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"not JSON from {' '.join(args)}: {p.stdout[:300]} {p.stderr[-300:]}")
    return p.returncode, out.get("structuredContent", out), out


def walk(cli, env, lang, root, query):
    steps = []
    code, sc, _ = run(cli, env, "manage_index", "--action", "create", "--path", root)
    steps.append(f"satori-cli manage_index --action create --path {root}  # exit {code}, {sc.get('state')}")
    code, sc, _ = run(cli, env, "search_codebase", "--path", root, "--query", query, "--limit", "5")
    steps.append(f"satori-cli search_codebase --path {root} --query '{query}' --limit 5  # exit {code}")
    hit = next((r for r in sc.get("results", []) if r["callGraphHint"]["supported"]), None)
    if hit is None:
        return {"language": lang, "ok": False, "why": "no result with a handle", "steps": steps}
    ref = hit["callGraphHint"]["symbolRef"]
    args = json.dumps({"path": root, "symbolRef": ref, "direction": "callers", "depth": 2})
    code, graph, _ = run(cli, env, "call_graph", "--args-json", args)
    steps.append(f"satori-cli call_graph --args-json '{args}'  # exit {code}, {graph.get('status')}")
    labels = {n["symbolId"]: f"{n['file']}:{n['span']['startLine']} {n['symbolLabel']}" for n in graph.get("nodes", [])}
    callers = [f"{labels[e['src']]} -> line {e['site']['startLine']} ({e['confidence']})" for e in graph.get("edges", [])]
    path = os.path.join(root, ref["file"])
    args = json.dumps({"path": path, "open_symbol": {"symbolId": ref["symbolId"]}})
    code, read, raw = run(cli, env, "read_file", "--args-json", args)
    steps.append(f"satori-cli read_file --args-json '{args}'  # exit {code}")
    text = raw.get("content", [{}])[0].get("text", "") if isinstance(raw, dict) else ""
    return {
        "language": lang,
        "ok": graph.get("status") == "ok" and code == 0,
        "symbol": f"{ref['file']}:{ref['span']['startLine']} {ref['symbolLabel']}",
        "callers_depth2": callers[:8],
        "caller_edges": len(callers),
        "notes": graph.get("notes", [])[:3],
        "opened": read.get("span") if isinstance(read, dict) else None,
        "first_line": text.splitlines()[0] if text else None,
        "steps": steps,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default="target/release/satori-cli")
    ap.add_argument("--home", required=True)
    ap.add_argument("--walk", action="append", default=[], help="LANG=DIR::QUERY")
    a = ap.parse_args()
    env = dict(os.environ, SATORI_HOME=a.home)
    failed = False
    for spec in a.walk:
        lang, _, rest = spec.partition("=")
        root, _, query = rest.partition("::")
        r = walk(os.path.realpath(a.cli), env, lang, os.path.realpath(root), query)
        failed |= not r["ok"]
        print(json.dumps(r, indent=1))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
