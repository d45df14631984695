#!/usr/bin/env bash
# Build the image, start it with a fresh volume, wait for the Docker health check to report
# healthy, then make one MCP round trip over streamable HTTP from the host. Needs a running
# Docker daemon and access to the python:3.11-slim base image (not available on the machine
# the project is developed on, so this is run by hand or by a CI that has Docker).
set -euo pipefail
cd "$(dirname "$0")/.."
tag="lithos:smoke"
name="lithos-smoke-$$"
port="${PORT:-18765}"
volume="lithos-smoke-$$"

cleanup() {
    docker rm -f "$name" >/dev/null 2>&1 || true
    docker volume rm "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

docker build -t "$tag" .
docker run -d --name "$name" -p "127.0.0.1:${port}:8765" -v "${volume}:/data" "$tag" >/dev/null

for _ in $(seq 1 60); do
    status="$(docker inspect --format '{{.State.Health.Status}}' "$name")"
    [ "$status" = "healthy" ] && break
    [ "$status" = "unhealthy" ] && { docker logs "$name"; exit 1; }
    sleep 2
done
[ "$status" = "healthy" ] || { echo "not healthy after 120 s"; docker logs "$name"; exit 1; }
echo "health check: $status"

PYTHON="${PYTHON:-.venv/bin/python}"
"$PYTHON" - "$port" <<'PY'
import asyncio, sys
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

async def main(port: str) -> None:
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")) as client:
        written = await client.call_tool(
            "lithos_write", {"title": "Docker smoke", "content": "body", "agent": "smoke"}
        )
        note_id = written.structured_content["id"]
        read = await client.call_tool("lithos_read", {"id": note_id})
        assert read.structured_content["title"] == "Docker smoke", read
        semantic = await client.call_tool("lithos_semantic", {"query": "docker smoke test"})
        print("round trip ok:", note_id, "semantic results:", len(semantic.structured_content["results"]))

asyncio.run(main(sys.argv[1]))
PY
docker exec "$name" sh -c 'ls /data/knowledge/*.md' && echo "the note is in the volume"
