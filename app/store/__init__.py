"""Persistence: SQLAlchemy 2 async tables and repositories (rows <-> domain types)."""
