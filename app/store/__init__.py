"""Persistence: SQLAlchemy 2 async tables and repositories (rows <-> domain types).

    database.py     Database / Tx: the one handle the layers above hold (units of work)
    repos/          every query, one module per table group, ownership filters built in
    tables/         the core's tables (column types in tables/types.py)
    records.py      what repositories return: frozen records, never ORM rows
    message_codec.py  stored message payloads <-> `Message`, with schema upcasts
    db.py           engines, session factory, the declarative `Base`
    migrate.py      Alembic in-process: the core and tool packages' own branches

Only this package (and tool packages that keep tables of their own) import SQLAlchemy.
"""
