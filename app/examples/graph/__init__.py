"""The example toolset: a small knowledge graph in the service's own database.

On by default in development only (`EXAMPLE_TOOLS_ENABLED` overrides); the container then
lists `app.examples.graph` first among the tool modules, and migrates its tables.

    tools.py       the six tools and `register(registry)`, the entry point TOOL_MODULES uses
    repo.py        the graph of one scope (every query filters by its scope key)
    tables.py      `graph_nodes`, `graph_edges`, on metadata of the example's own
    migrations/    its Alembic branch (`graph_example`); why a branch: `graph_0001`

A deployer's own tool package with tables follows the same layout.
"""

from app.examples.graph.tools import register

__all__ = ["register"]
