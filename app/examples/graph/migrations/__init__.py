"""The example graph's Alembic revisions (branch `graph_example`); see `graph_0001`.

A package only so that it ships with `app`; Alembic reads the scripts as files.
"""
