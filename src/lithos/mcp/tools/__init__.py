"""MCP tool groups. Each module exposes ``register(server, app)`` and holds thin handlers."""
