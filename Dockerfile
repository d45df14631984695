# Lithos as an HTTP MCP server. The embedding model is part of the package, so the image needs
# no download at run time. Data (knowledge/ and .lithos/) lives in the /data volume.
#   docker build -t lithos .
#   docker run -p 127.0.0.1:8765:8765 -v lithos-data:/data lithos
# BASE may be any image with Python 3.11+ and its venv module (scripts/docker_smoke.sh uses a
# local Debian one where Docker Hub cannot be reached).
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    FASTMCP_CHECK_FOR_UPDATES=off

WORKDIR /build
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
# Lithos lives in its own venv (a distribution's Python may refuse a system-wide pip install).
RUN python3 -m venv /opt/lithos && /opt/lithos/bin/pip install . && rm -rf /build \
    && useradd --system --uid 10001 --home-dir /data lithos \
    && mkdir -p /data && chown lithos /data

# Inside the container Lithos must listen on every interface for the published port to reach
# it; publish that port only where the (unauthenticated) knowledge base may be reached.
ENV PATH=/opt/lithos/bin:$PATH \
    LITHOS_HOST=0.0.0.0 \
    LITHOS_PORT=8765 \
    LITHOS_DATA_DIR=/data

USER lithos
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8765

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=4).status != 200)"]

CMD ["lithos", "serve", "--transport", "http"]
