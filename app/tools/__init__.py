"""Server tools: the registry, scope pinning, the runtime the agent loop calls, approvals
for `confirm` tools, proposal queues, and the example knowledge-graph toolset."""
