#!/usr/bin/env bash
# Connect the official MCP Inspector CLI (npm @modelcontextprotocol/inspector, needs Node 22+)
# to Lithos over stdio, streamable HTTP and SSE: list the tools (with --strict, which fails on
# a tool schema other clients could not use) and call tools, checking the answers.
#
#   scripts/inspector_smoke.sh              # uses .venv/bin/lithos and `npx` from PATH
#   LITHOS=/path/to/lithos scripts/inspector_smoke.sh
#
# Node 22 where the system has an older one (no root needed):
#   npm install --prefix ~/node22 node@22 && export PATH=~/node22/node_modules/.bin:$PATH
# npx fetches the Inspector on first use (INSPECTOR=@modelcontextprotocol/inspector@2.12.0 pins it).
set -euo pipefail
cd "$(dirname "$0")/.."
LITHOS="${LITHOS:-$PWD/.venv/bin/lithos}"
INSPECTOR="${INSPECTOR:-@modelcontextprotocol/inspector@2.12.0}"
PORT="${PORT:-18766}"
export FASTMCP_CHECK_FOR_UPDATES=off

major="$(node --version | sed 's/^v\([0-9]*\).*/\1/')"
[ "$major" -ge 22 ] || { echo "the Inspector needs Node 22+, found $(node --version)"; exit 2; }

work="$(mktemp -d)"
server=""
cleanup() {
    [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

inspect() { npx --yes "$INSPECTOR" --cli "$@" 2>>"$work/inspector.log"; }

# Check a JSON answer on stdin with a Python expression over `r`; print what it shows.
expect() {
    python3 -c '
import json, sys
r = json.load(sys.stdin)
ok = eval(sys.argv[1])
print(("ok  " if ok else "FAIL") + " " + sys.argv[2])
sys.exit(0 if ok else 1)' "$1" "$2"
}

echo "== stdio ($LITHOS serve --transport stdio)"
stdio=(-- "$LITHOS" serve --transport stdio --data-dir "$work/stdio")
inspect --method tools/list --strict "${stdio[@]}" \
    | expect 'len(r["tools"]) >= 30 and all(t.get("outputSchema") for t in r["tools"])' \
        "tools/list: every tool has an output schema; --strict found no schema problem"
inspect --method tools/call --tool-name lithos_write --tool-arg title="Inspector note" \
    content="Written through the MCP Inspector #inspector" agent=inspector "${stdio[@]}" \
    | expect 'r["structuredContent"]["status"] == "created"' "tools/call lithos_write: created"
inspect --method tools/call --tool-name lithos_search --tool-arg query=inspector "${stdio[@]}" \
    | expect '[h["title"] for h in r["structuredContent"]["results"]] == ["Inspector note"]' \
        "tools/call lithos_search finds the note in a new session"
# The Inspector exits non-zero for an isError result: the answer is what is checked.
{ inspect --method tools/call --tool-name lithos_read --tool-arg path=missing.md "${stdio[@]}" || true; } \
    | expect 'r["isError"] and json.loads(r["content"][0]["text"])["code"] == "doc_not_found"' \
        "a failing call answers with the error envelope (as text, isError)"

echo "== streamable HTTP and SSE (lithos serve on 127.0.0.1:$PORT)"
"$LITHOS" serve --port "$PORT" --data-dir "$work/stdio" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.5
done
curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null || { cat "$work/serve.log"; exit 1; }
for url in "http://127.0.0.1:$PORT/mcp" "http://127.0.0.1:$PORT/sse"; do
    inspect "$url" --method tools/list --strict \
        | expect 'any(t["name"] == "lithos_retrieve" for t in r["tools"])' "$url tools/list"
    inspect "$url" --method tools/call --tool-name lithos_read --tool-arg path="Inspector note.md" \
        | expect '"Written through the MCP Inspector" in r["structuredContent"]["content"]' \
            "$url tools/call lithos_read reads the note written over stdio"
done
echo "MCP Inspector smoke test passed"
