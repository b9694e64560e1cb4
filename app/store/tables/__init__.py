"""The service's own tables, one module per group, all on `app.store.db.Base`.

    types.py     column types (JSON / JSONB, UTC timestamps) and prefixed ids
    core.py      conversations, messages, runs, run events, audit log   (0001_core)
                 and a conversation's next message position  (0012_conversation_next_position)
                 and run events stored one row per batch      (0013_event_batches)
                 and cancels asked for on another instance (0014_run_cancel_requests)
    tools.py     tool approvals, proposals and their batches            (0002_tools)
                 and the questions tools ask mid-call              (0009_elicitations)
                 and the hash of each question's answer   (0016_elicitation_answer_hash)
    identity.py  API keys                                               (0003_identity)
    files.py     uploaded files and their extracted text                (0004_files)
    queue.py     the review queue's per-user change feed               (0005_queue_events)
    usage.py     usage records, one per model call                      (0006_usage)
    feed.py      a conversation's follow feed: runs and part changes    (0008_conversation_feed)
    jobs.py      background jobs (long-running tool calls)              (0011_background_jobs)
    idempotency.py  create requests' outcomes under an Idempotency-Key  (0015_idempotency_keys)
                    and their expiry, for the sweep         (0017_idempotency_key_expiry)
                    and the conversation each is about  (0018_idempotency_conversation)

Every module here is imported by `app.store.migrate.target_metadata()`, which a test
compares with the migrations. Tool modules that keep tables of their own (the example
graph) declare them on their own metadata, beside their own migrations, not here.
"""
