"""The persistent tool runtime: runs server tool calls and keeps what waits for a human.

    runtime.py     ServerToolRuntime: `invoke` for the agent loop (policy, pinning, timeout)
    asking.py      a `confirm` call stores an approval and waits
    proposing.py   a proposed call is queued on its conversation, with a receipt
    approvals.py   ApprovalService: a human decides; an approved call runs exactly once
    proposals.py   ProposalService: a human applies the queue in one transaction, or drops it
    audit.py       the audit record of every mutating call
    outcomes.py    error outcomes, JSON results, the call site of a stored call

It builds on the authoring API (`app.tools`) and reaches the database only through the
store's units of work (`app.store.database.Database` / `Tx`) and their repositories: no
SQLAlchemy here. The container builds the runtime and both services once.
"""
