#!/usr/bin/env bash
# Register Lithos with Claude Code's CLI (npm @anthropic-ai/claude-code) the way the README
# says, over stdio and over streamable HTTP, and let `claude mcp list` connect to both. No API
# key is needed: `claude mcp list` only starts or reaches each server and checks it answers
# MCP. Runs with a throwaway HOME, so your own Claude Code configuration is not touched.
#
#   scripts/claude_code_smoke.sh          # uses .venv/bin/lithos and `claude` (or npx) from PATH
#   LITHOS=/path/to/lithos scripts/claude_code_smoke.sh
#
# Needs Node 18+ (Node 22 from npm where the system has an older one: see
# scripts/inspector_smoke.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
LITHOS="${LITHOS:-$PWD/.venv/bin/lithos}"
PORT="${PORT:-18767}"
export FASTMCP_CHECK_FOR_UPDATES=off
claude=(claude)
command -v claude >/dev/null || claude=(npx --yes @anthropic-ai/claude-code)

work="$(mktemp -d)"
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
export HOME="$work/home"
mkdir -p "$HOME"

"$LITHOS" serve --port "$PORT" --data-dir "$work/http-data" >"$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 1 120); do
    curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.5
done

# The README's two lines (user scope: a project-scope server waits for interactive approval).
"${claude[@]}" mcp add --scope user --transport http lithos "http://127.0.0.1:$PORT/mcp" >/dev/null
"${claude[@]}" mcp add --scope user lithos-stdio -- \
    "$LITHOS" serve --transport stdio --data-dir "$work/stdio-data" >/dev/null
"${claude[@]}" --version
listed="$("${claude[@]}" mcp list 2>&1)"
echo "$listed"
for entry in lithos lithos-stdio; do
    echo "$listed" | grep -q "^$entry: .*Connected" || { echo "FAIL: $entry did not connect"; exit 1; }
done
echo "Claude Code smoke test passed: both entries connected"
