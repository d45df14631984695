"""Lithos: a shared, local-first memory and coordination server for AI agents over MCP."""

__version__ = "0.1.0"
