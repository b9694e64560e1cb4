"""Background jobs: the calls of long-running tools, listed and cancelled by their owner.

A job's result continues its conversation by itself (a new run); these routes let a UI
show what is running and stop it. Another user's job is 404 `job_not_found`. Cancelling
an ended job changes nothing and answers it as it is.
"""

from __future__ import annotations

from fastapi import Query

from app.api.deps import BackgroundDep, CallerDep, ToolCatalogDep
from app.api.routing import api_router
from app.api.schemas.background_jobs import BackgroundJobList, BackgroundJobOut
from app.store.repos.jobs import JobRecord
from app.tools.catalog import ToolCatalog

router = api_router(prefix="/api/background-jobs", tags=["background jobs"])


def _out(job: JobRecord, tools: ToolCatalog) -> BackgroundJobOut:
    return BackgroundJobOut(
        id=job.id,
        conversation_id=job.conversation_id,
        run_id=job.run_id,
        tool_call_id=job.tool_call_id,
        tool_name=job.tool_name,
        args=tools.shown_args(job.tool_name, job.args),
        status=job.status,
        result=job.result,
        error=job.error,
        attempts=job.attempts,
        created_at=job.created_at,
        finished_at=job.finished_at,
        delivered=job.delivered_at is not None,
    )


@router.get("", response_model=BackgroundJobList, summary="Your background jobs.")
async def list_jobs(
    jobs: BackgroundDep,
    tools: ToolCatalogDep,
    caller: CallerDep,
    limit: int = Query(default=50, ge=1, le=200, description="At most this many, newest first."),
) -> BackgroundJobList:
    return BackgroundJobList(
        data=[_out(j, tools) for j in await jobs.of_owner(caller.user_id, limit=limit)]
    )


@router.get(
    "/{job_id}",
    response_model=BackgroundJobOut,
    summary="One background job.",
    responses={404: {"description": "No such job (or not yours)."}},
)
async def get_job(
    job_id: str, jobs: BackgroundDep, tools: ToolCatalogDep, caller: CallerDep
) -> BackgroundJobOut:
    return _out(await jobs.get(caller.user_id, job_id), tools)


@router.post(
    "/{job_id}/cancel",
    response_model=BackgroundJobOut,
    summary="Stop a background job; its conversation hears it was cancelled.",
    responses={404: {"description": "No such job (or not yours)."}},
)
async def cancel_job(
    job_id: str, jobs: BackgroundDep, tools: ToolCatalogDep, caller: CallerDep
) -> BackgroundJobOut:
    return _out(await jobs.cancel(caller.user_id, job_id), tools)
