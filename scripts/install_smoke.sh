#!/usr/bin/env bash
# Install Lithos without a clone of one's own, the ways the README gives, each into throwaway
# directories, and check that each installed `lithos` answers --version and serves /health:
#
#   0. the README's first command, literally, in a fresh clone (venv, pip install -e ., serve)
#   1. pipx install <wheel>          (wheel built with `pip wheel . --no-deps`)
#   2. uv tool install <wheel>
#   3. pipx install git+file://...   (a repository URL; git+https://... works the same way)
#
# pipx and uv come from PyPI into a throwaway venv. Uses the committed HEAD (a fresh clone), not
# uncommitted changes. Needs python3 (3.11+), git and network access to PyPI. About 3-6 minutes.
#
#   scripts/install_smoke.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
work="$(mktemp -d)"
server=""
cleanup() {
    if [ -n "$server" ]; then
        kill -- "-$server" 2>/dev/null || kill "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
export FASTMCP_CHECK_FOR_UPDATES=off PIP_DISABLE_PIP_VERSION_CHECK=1
export UV_NATIVE_TLS=1 UV_PYTHON_DOWNLOADS=never UV_NO_CONFIG=1  # the system's certificates and Python
python="${PYTHON:-python3}"

echo "== tools: pipx and uv into $work/tools"
"$python" -m venv "$work/tools"
"$work/tools/bin/pip" install -q pipx uv
export PATH="$work/tools/bin:$PATH"

echo "== wheel from a fresh clone of HEAD"
git clone -q "file://$repo" "$work/clone"
"$work/tools/bin/pip" wheel -q "$work/clone" --no-deps -w "$work/dist"
wheel="$(ls "$work"/dist/lithos_kb-*.whl)"
echo "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

port=18790
check() {  # $1: how it was installed, $2: the directory holding the `lithos` it installed
    local lithos="$2/lithos" data="$work/data-$port"
    [ -x "$lithos" ] || { echo "FAIL $1: no lithos command in $2"; exit 1; }
    local version
    version="$("$lithos" --version)"
    "$lithos" serve --port "$port" --data-dir "$data" >"$work/serve-$port.log" 2>&1 &
    server=$!
    for _ in $(seq 1 120); do
        curl -fsS "http://127.0.0.1:$port/health" >"$work/health.json" 2>/dev/null && break
        kill -0 "$server" 2>/dev/null || { cat "$work/serve-$port.log"; exit 1; }
        sleep 0.5
    done
    grep -q '"status"' "$work/health.json" || { echo "FAIL $1: no /health"; cat "$work/serve-$port.log"; exit 1; }
    kill "$server"; wait "$server" 2>/dev/null || true; server=""
    echo "ok   $1: '$version', /health $(cat "$work/health.json" | head -c 120)"
    port=$((port + 1))
}

echo "== 0. the README's set-up command in the clone"
readme_command="$(grep -m1 '^python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/lithos serve$' \
    "$work/clone/README.md")" || { echo "FAIL: the README's set-up command changed"; exit 1; }
# In a session of its own, so that the whole command line (venv, pip, serve) stops together.
(cd "$work/clone" && LITHOS_PORT=$port LITHOS_DATA_DIR="$work/readme-data" \
    exec setsid bash -c "$readme_command" >"$work/readme.log" 2>&1) &
server=$!
for _ in $(seq 1 600); do  # includes the pip install
    curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { tail -20 "$work/readme.log"; exit 1; }
    sleep 0.5
done
curl -fsS "http://127.0.0.1:$port/health" >/dev/null || { tail -20 "$work/readme.log"; exit 1; }
kill -TERM -- "-$server" 2>/dev/null || true
wait "$server" 2>/dev/null || true
server=""
echo "ok   README: '$readme_command' serves /health"
port=$((port + 1))
rm -rf "$work/clone/.venv"

echo "== 1. pipx install <wheel>"
PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/pipx-bin" pipx install --python "$python" "$wheel" >/dev/null 2>&1
check "pipx install $(basename "$wheel")" "$work/pipx-bin"

echo "== 2. uv tool install <wheel>"
UV_TOOL_DIR="$work/uv" UV_TOOL_BIN_DIR="$work/uv-bin" uv tool install --python "$python" "$wheel" >/dev/null 2>&1
check "uv tool install $(basename "$wheel")" "$work/uv-bin"

echo "== 3. pipx install git+file://<clone>"
PIPX_HOME="$work/pipx-git" PIPX_BIN_DIR="$work/pipx-git-bin" \
    pipx install --python "$python" "git+file://$work/clone" >/dev/null 2>&1
check "pipx install git+file://<clone>" "$work/pipx-git-bin"
echo "install smoke test passed"
