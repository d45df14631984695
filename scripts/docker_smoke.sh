#!/usr/bin/env bash
# Build the image, run it with a fresh volume, wait for Docker's own HEALTHCHECK to report
# healthy, make MCP calls over streamable HTTP from the host (write, read, semantic search,
# which needs the baked-in model), check the note landed in the volume, then run a second
# container from the same volume with no network at all and check that it starts healthy and
# answers a semantic search from inside: nothing is downloaded at run time.
#
#   scripts/docker_smoke.sh
#   BASE=lithos-base:bookworm scripts/docker_smoke.sh   # another base image (see below)
#
# Needs a Docker daemon, network access to PyPI while building, and the base image
# (python:3.11-slim from Docker Hub by default). Where Docker Hub cannot be reached,
# scripts/docker_local_base.sh builds a Debian base image locally and BASE selects it.
# DOCKER_BUILD_ARGS adds options to `docker build` (e.g. "--network host").
set -euo pipefail
cd "$(dirname "$0")/.."
tag="lithos:smoke"
name="lithos-smoke-$$"
offline="lithos-smoke-offline-$$"
port="${PORT:-18765}"
volume="lithos-smoke-$$"
base="${BASE:-python:3.11-slim}"
PYTHON="${PYTHON:-.venv/bin/python}"

cleanup() {
    docker rm -f "$name" "$offline" >/dev/null 2>&1 || true
    docker volume rm "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

wait_healthy() {  # $1: container; Docker's HEALTHCHECK decides
    local status=""
    for _ in $(seq 1 90); do
        status="$(docker inspect --format '{{.State.Health.Status}}' "$1")"
        [ "$status" = "healthy" ] && break
        [ "$status" = "unhealthy" ] && break
        sleep 2
    done
    [ "$status" = "healthy" ] || { echo "$1: $status after 180 s"; docker logs "$1"; exit 1; }
    echo "$1: health check $status"
}

# shellcheck disable=SC2086  # DOCKER_BUILD_ARGS is a list of options
docker build ${DOCKER_BUILD_ARGS:-} --build-arg "BASE=$base" -t "$tag" .
docker run -d --name "$name" -p "127.0.0.1:${port}:8765" -v "${volume}:/data" "$tag" >/dev/null
wait_healthy "$name"

"$PYTHON" - "$port" <<'PY'
import asyncio, sys
from fastmcp import Client

async def main(port: str) -> None:
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        written = await client.call_tool(
            "lithos_write",
            {"title": "Docker smoke", "content": "Brewing green tea at 80 degrees", "agent": "smoke"},
        )
        note_id = written.structured_content["id"]
        read = await client.call_tool("lithos_read", {"id": note_id})
        assert read.structured_content["title"] == "Docker smoke", read
        for _ in range(120):  # the background worker embeds the note with the baked-in model
            stats = await client.call_tool("lithos_stats", {})
            if stats.structured_content["indexes"]["pending_chunks"] == 0:
                break
            await asyncio.sleep(0.5)
        found = await client.call_tool("lithos_semantic", {"query": "making tea"})
        hits = [hit["id"] for hit in found.structured_content["results"]]
        assert hits[:1] == [note_id], found
        print("MCP over HTTP from the host: write, read, semantic search ok:", note_id)

asyncio.run(main(sys.argv[1]))
PY
docker exec "$name" sh -c 'ls /data/knowledge/*.md' && echo "the note is in the volume"
docker stop "$name" >/dev/null

# Same volume, no network at all: the model is in the image, nothing is fetched.
docker run -d --name "$offline" --network none -v "${volume}:/data" "$tag" >/dev/null
wait_healthy "$offline"
docker exec -i "$offline" python - <<'PY'
import asyncio
from fastmcp import Client

async def main() -> None:
    async with Client("http://127.0.0.1:8765/mcp") as client:
        found = await client.call_tool("lithos_search", {"query": "tea", "mode": "hybrid"})
        titles = [hit["title"] for hit in found.structured_content["results"]]
        assert titles[:1] == ["Docker smoke"], found
        print("offline container (--network none): the note from the volume is found:", titles)

asyncio.run(main())
PY
echo "docker smoke test passed"
