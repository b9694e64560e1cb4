"""The tool authoring API: what a server tool is and who may use it.

    base.py       ServerTool, ToolArgs, ToolContext, ToolFailure, `visible_args`
    registry.py   ToolRegistry: the tools that exist
    access.py     ToolAccess: allow / deny lists per deployment and model, and roles
    catalog.py    ToolCatalog: what one caller and model may see and call
    pinning.py    scope pinning and argument validation, before any handler runs
    modules.py    loading tool modules (`register(registry)`) and finding their migrations

It imports the domain and pydantic only: no settings (the container passes plain values),
no database. The runtime that runs calls and persists approvals and proposals is
`app.toolruntime`; the example toolset is `app.examples.graph`.
"""
