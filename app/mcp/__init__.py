"""MCP servers as tool sources: their tools mounted into the same registry as ours.

    config.py    the `MCP_SERVERS` setting's shape (servers, transports, policies)
    schema.py    an arguments model from a tool's JSON input schema (validated by us)
    results.py   an MCP call result as the JSON our tool parts carry
    server.py    one server: connect, list, mount, re-list on change, reconnect, call
    closing.py   leaving a connection in bounded time (a frozen server never says goodbye)
    sources.py   every configured server: started together, their status for /readyz

This room sits below the tool runtime and above the authoring API: it produces
`ServerTool`s, so policies, roles, allow/deny lists, scope pinning, timeouts and audit
apply to an MCP tool exactly as to one of ours. It is the only room that imports the `mcp`
SDK; settings reach it as the plain `McpServerConfig`s the container parses.
"""
