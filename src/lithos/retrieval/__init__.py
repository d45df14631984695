"""Cognitive retrieval (LCMA): scouts, rerank, receipts and learning from feedback."""
