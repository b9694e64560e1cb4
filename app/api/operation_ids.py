"""Operation ids that read as verbs, so generated clients call `createConversation`, not
`create_conversation_api_conversations_post`.

FastAPI's default id glues the function name to the path and method: it changes whenever
a path does, and generated SDKs turn it into method and module names nobody would type.
Here every route's id is named once, keyed by its endpoint's function name; a route not
listed (a new one) gets its function name in camelCase, still stable across path changes.
`create_app` passes `operation_id` as FastAPI's `generate_unique_id_function`, so the ids
also name FastAPI's generated body schemas (`Body_uploadFile`).
"""

from __future__ import annotations

from fastapi.routing import APIRoute

OPERATION_IDS: dict[str, str] = {
    # health, metrics, identity
    "healthz": "checkHealth",
    "readyz": "checkReadiness",
    "metrics": "getMetrics",
    "me": "getMe",
    "mint_stream_token": "createStreamToken",
    # admin
    "read_audit": "listAuditEntries",
    "create_key": "createApiKey",
    "list_keys": "listApiKeys",
    "revoke_key": "revokeApiKey",
    "read_all_usage": "getUsageReport",
    # usage
    "read_usage": "getMyUsage",
    # catalogue
    "list_models": "listModels",
    "list_tools": "listTools",
    "route_tools": "checkToolRoute",
    # stateless turns
    "chat": "runChatTurn",
    "chat_completions": "createChatCompletion",
    "create_response": "createResponse",
    "retrieve_response": "retrieveResponse",
    "list_models_openai": "listOpenAIModels",
    "retrieve_model_openai": "retrieveOpenAIModel",
    # conversations and their runs
    "create_conversation": "createConversation",
    "list_conversations": "listConversations",
    "get_conversation": "getConversation",
    "update_conversation": "updateConversation",
    "delete_conversation": "deleteConversation",
    "send_message": "sendMessage",
    "edit_message": "editMessage",
    "regenerate": "regenerateMessage",
    "run_events": "streamRunEvents",
    "follow_conversation": "followConversation",
    "cancel_run": "cancelRun",
    "submit_tool_results": "submitToolResults",
    # files
    "upload_file": "uploadFile",
    "get_file": "getFile",
    "get_file_content": "downloadFile",
    "delete_file": "deleteFile",
    # humans in the loop
    "inbox": "listApprovals",
    "get_approval": "getApproval",
    "decide": "decideApproval",
    "answer_submission": "submitToolAnswer",
    "list_proposals": "listProposals",
    "approve_proposals": "approveProposals",
    "reject_proposals": "rejectProposals",
    "queue_events": "streamQueueEvents",
    # background jobs (long-running tools)
    "list_jobs": "listBackgroundJobs",
    "get_job": "getBackgroundJob",
    "cancel_job": "cancelBackgroundJob",
    # Vercel AI SDK UI message stream
    "ui_chat": "sendUiChatMessage",
    "resume_ui_chat": "resumeUiChatStream",
    "stop_ui_chat": "stopUiChat",
    # OpenAI Conversations
    "create_conversation_v1": "createOpenaiConversation",
    "get_conversation_v1": "getOpenaiConversation",
    "update_conversation_v1": "updateOpenaiConversation",
    "delete_conversation_v1": "deleteOpenaiConversation",
    "list_items_v1": "listOpenaiConversationItems",
    "create_items_v1": "createOpenaiConversationItems",
    "get_item_v1": "getOpenaiConversationItem",
    # AG-UI
    "run_agui": "runAguiAgent",
    "stop_agui": "stopAguiRun",
}


def operation_id(route: APIRoute) -> str:
    """The route's operation id: listed above, else its function name in camelCase."""
    listed = OPERATION_IDS.get(route.name)
    if listed is not None:
        return listed
    head, *rest = route.name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)
