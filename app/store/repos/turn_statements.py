"""The statements of a conversation turn, built once.

A persisted run sends about a dozen statements (see `RunJournal`), and under load building
them cost more than running them: every call made its SQL expression again (column
comparisons, `values()`, `case()`), SQLAlchemy walked it for a cache key, and the ORM's
plugin planned the UPDATE and the unit of work flushed each new row. These are Core
statements over the tables, with named parameters: SQLAlchemy keeps their cache key on
the statement object, so executing one is a lookup of its compiled form and the
parameters. Parameter names start with `p_` (the names of columns are reserved in SET
and VALUES clauses).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from sqlalchemy import (
    CTE,
    Select,
    Table,
    bindparam,
    case,
    func,
    insert,
    literal_column,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy import cast as sql_cast
from sqlalchemy.sql.dml import Insert, Update
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.selectable import TableValuedAlias

from app.store.repos.message_values import AppendValues
from app.store.tables.core import ConversationRow, MessageRow, RunEventRow, RunRow
from app.store.tables.feed import FeedRow
from app.store.tables.usage import UsageRow

CONVERSATIONS = cast(Table, ConversationRow.__table__)
MESSAGES = cast(Table, MessageRow.__table__)
RUNS = cast(Table, RunRow.__table__)
FEED = cast(Table, FeedRow.__table__)
USAGE = cast(Table, UsageRow.__table__)
EVENTS = cast(Table, RunEventRow.__table__)

_c = CONVERSATIONS.c
_m = MESSAGES.c


@dataclass(frozen=True, slots=True)
class RunStart:
    """A run that starts with the message its claim appends: the run's row (by column)
    and its feed entry's parameters for `INSERT_FEED_ENTRY` besides p_cid and p_now."""

    row: dict[str, Any]
    feed: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RunClose:
    """A run's end that the append of its answer writes along: the run's final columns
    (`UPDATE_RUN`'s parameters besides p_run) and its usage rows (by column)."""

    run: dict[str, Any]
    usage: list[dict[str, Any]]


def together_params(
    values: AppendValues, starting: RunStart | None = None, closing: RunClose | None = None
) -> dict[str, Any]:
    """`append_message`'s parameters: the message's row (`m_`), and the run's row and feed
    entry (`r_`) or its end (`u_`, its usage rows as JSON) that go along."""
    params = dict(values.params)
    params.update((f"m_{name}", value) for name, value in values.row.items())
    if starting is not None:
        params.update((f"r_{name}", value) for name, value in starting.row.items())
        params.update(starting.feed)
    if closing is not None:
        params.update((f"u_{name}", value) for name, value in closing.run.items())
        params["u_rows"] = [
            row | {"created_at": row["created_at"].isoformat()} for row in closing.usage
        ]
    return params


@cache
def bump_conversation(
    *,
    preview: bool,
    title: bool,
    release: bool,
    claim: bool,
    id_check: bool = True,
    unchanged: bool = False,
) -> Update:
    """The conversation's UPDATE for a message appended to it (`MessageRepo.append`):
    count, time and the next position, then optionally the preview, a title (kept when
    one is set), letting the run `p_release` go, or claiming it for `p_claim` when no run
    holds it. Parameters: p_cid, p_owner, p_now, p_mid (the message's id) and those of the
    options. When a row matched it returns the position after the message's (the new
    `next_position`) and, with `id_check`, how many of the conversation's messages have
    the id p_mid already: the append needs no read of its own. `unchanged` (Postgres)
    matches the row only as the statement's snapshot saw it: an UPDATE that waited for
    the row lock while another change to it committed matches nothing."""
    values: dict[str, Any] = {
        "message_count": _c.message_count + 1,
        "next_position": case(
            (_c.next_position >= _AFTER_LAST, _c.next_position), else_=_AFTER_LAST
        )
        + 1,
        "updated_at": bindparam("p_now", type_=_c.updated_at.type),
    }
    if preview:
        values["last_message_preview"] = bindparam("p_preview", type_=_c.last_message_preview.type)
    if title:
        keep_title = _c.title.is_not(None) | _c.title_set_by_user
        values["title"] = case(
            (keep_title, _c.title), else_=bindparam("p_title", type_=_c.title.type)
        )
    if release:
        values["active_run_id"] = case(
            (_c.active_run_id == bindparam("p_release", type_=_c.active_run_id.type), None),
            else_=_c.active_run_id,
        )
    where = [_c.id == bindparam("p_cid"), _c.owner_id == bindparam("p_owner")]
    if claim:
        where.append(_c.active_run_id.is_(None))
        values["active_run_id"] = bindparam("p_claim", type_=_c.active_run_id.type)
    if unchanged:
        where.append(_ROW_VERSION == _SEEN_VERSION)
    bump = update(CONVERSATIONS).where(*where).values(values)
    return (
        bump.returning(_c.next_position, _TAKEN) if id_check else bump.returning(_c.next_position)
    )


@cache
def append_message(
    *,
    preview: bool,
    title: bool,
    release: bool,
    claim: bool,
    start_run: bool = False,
    close_run: bool = False,
    whole: bool = False,
) -> Select[Any]:
    """Postgres: `bump_conversation` and the message's INSERT in one statement, one round
    trip (a data-modifying WITH). The INSERT takes the position the UPDATE handed out and
    does nothing when the id is taken; that also finds an append of the same id that
    committed while this one waited for the conversation's row lock, which a subquery of
    the UPDATE would miss (its snapshot is older than the wait). Returns the new
    `next_position` and how many messages were inserted (0: the id is taken), or no row
    when the UPDATE matched none. The message's values are parameters named `m_` and
    its columns (a parameter named after a column would join the UPDATE's SET clause),
    besides those of `bump_conversation`.

    `start_run` (with `claim`: a run starts with this message) also inserts the run's
    row (parameters `r_` and its columns) and its feed entry (`INSERT_FEED_ENTRY`'s
    parameters, at `p_now`), only when the UPDATE matched: a claim that finds the
    conversation held writes nothing. A third column says whether the feed entry went
    in: its number comes from the statement's snapshot, and when the claim waited for
    the row lock while another change added an entry (a decision), that number is taken
    and the entry is left to `INSERT_FEED_ENTRY` after it. An id taken raises in the
    caller, which rolls the transaction back, the run's row with it.

    `close_run` (with `release`: the answer of the run p_release) also sets the run's
    final columns (parameters `u_` and the column) and inserts its usage rows (`u_rows`,
    a JSON array of rows by column), whatever becomes of the message; a last column says
    how many runs were updated (0: the run is gone).

    `whole` with `start_run` also returns the conversation's current messages, the new
    one last, one a row after the counts, and makes the statement need no transaction
    around it: when the id is taken or the feed entry did not go in, a column divides by
    zero and Postgres undoes all of it. The messages are the statement's snapshot, so
    the claim matches only a row that no change committed to while it waited for the
    row lock (`bump_conversation`'s `unchanged`), and a decision that held the row with
    `FOR UPDATE` meanwhile wrote a feed entry on the number the run's entry takes from
    the snapshot, so the run's does not go in. Either way the caller sees no row or the
    error, and starts the run again through the repositories, whose history is read
    after the claim.

    `whole` with `close_run` also inserts the run's last event batch (parameters `e_`
    and the columns of `run_events`) and makes the statement need no transaction around
    it: the batch, the run's end and the usage rows are written only when the UPDATE
    matched (as the message), and when the message's id is taken or the run is gone a
    last column divides by zero, so the statement fails and Postgres undoes all of it,
    as the rollback of the transaction did."""
    from sqlalchemy.dialects import postgresql  # imported where the database is Postgres

    history = whole and start_run
    bumped = bump_conversation(
        preview=preview,
        title=title,
        release=release,
        claim=claim,
        id_check=False,
        unchanged=history,
    ).cte("bumped")
    added = (
        postgresql.insert(MESSAGES)
        .from_select(
            _MESSAGE_COLUMNS,
            _typed_row(
                bumped, MESSAGES, _MESSAGE_COLUMNS, "m_", {"position": bumped.c.next_position - 1}
            ),
        )
        .on_conflict_do_nothing(index_elements=["conversation_id", "id"])
        .returning(*(MESSAGES.c if history else [_m.position]))
        .cte("added")
    )
    inserted = select(func.count()).select_from(added).scalar_subquery()
    statement = select(bumped.c.next_position, inserted)
    if start_run:
        run_columns = [c.name for c in RUNS.c]
        run_row = _typed_row(bumped, RUNS, run_columns, "r_", {})
        run = insert(RUNS).from_select(run_columns, run_row)
        feed_row = select(*_FEED_ENTRY.values()).select_from(bumped)
        feed = (
            postgresql.insert(FEED)
            .from_select(list(_FEED_ENTRY), feed_row)
            .on_conflict_do_nothing()
            .returning(FEED.c.seq)
            .cte("feed_added")
        )
        # Each reads `bumped`, so each inserts a row only when the claim took hold.
        statement = statement.add_cte(run.returning(RUNS.c.id).cte("run_added"))
        entered = select(func.count()).select_from(feed).scalar_subquery()
        statement = statement.add_columns(entered)
        if history:
            return _with_history(statement, bumped, added, inserted * entered)
    if close_run:
        ended = update(RUNS).where(RUNS.c.id == bindparam("p_release")).values(_RUN_END)
        usage = _usage_rows()
        if whole:
            matched = select(bumped.c.next_position).exists()
            ended = ended.where(matched)
            usage = _usage_rows(matched)
            batch = insert(EVENTS).from_select(
                _EVENT_COLUMNS, _typed_row(bumped, EVENTS, _EVENT_COLUMNS, "e_", {})
            )
            statement = statement.add_cte(batch.returning(EVENTS.c.seq).cte("batch_added"))
        statement = statement.add_cte(usage)
        ended_count = (
            select(func.count())
            .select_from(ended.returning(RUNS.c.id).cte("ended"))
            .scalar_subquery()
        )
        statement = statement.add_columns(ended_count)
        if whole:
            statement = statement.add_columns(
                (literal_column("1") / (inserted * ended_count)).label("whole")
            )
    return statement


def _with_history(statement: Select[Any], bumped: CTE, added: CTE, wrote: Any) -> Select[Any]:
    """`statement`'s counts, a column that divides by `wrote` and the conversation's
    current messages (p_cid, p_owner) with the one `added`, in order: one row for each,
    or the counts alone when there are none; no row when `bumped` matched none."""
    appended = select(*[added.c[c.name] for c in MESSAGES.c])
    current = union_all(HISTORY.order_by(None), appended).subquery("current_messages")
    return (
        statement.add_columns((literal_column("1") / wrote).label("whole"), *current.c)
        .select_from(bumped.outerjoin(current, true()))
        .order_by(current.c.position)
    )


def _typed_row(
    source: CTE, table: Table, columns: list[str], prefix: str, given: dict[str, Any]
) -> Select[Any]:
    """A row of `table`'s `columns` for each row of `source`: parameters named `prefix`
    and the column, or the expressions in `given`. Typed casts: in a SELECT list,
    Postgres would take an untyped parameter for text."""
    values = [
        given[name]
        if name in given
        else sql_cast(bindparam(f"{prefix}{name}", type_=table.c[name].type), table.c[name].type)
        for name in columns
    ]
    return select(*values).select_from(source)


_MESSAGE_COLUMNS = [c.name for c in MESSAGES.c if c.name not in ("superseded_at", "superseded_by")]
_EVENT_COLUMNS = [c.name for c in EVENTS.c]

# A run's final columns, from parameters named `u_` and the column.
RUN_END_COLUMNS = ("status", "ended_at", "error", "usage", "last_seq")
_RUN_END = {name: bindparam(f"u_{name}", type_=RUNS.c[name].type) for name in RUN_END_COLUMNS}

_USAGE_COLUMNS = [c.name for c in USAGE.c]


@cache
def _usage_records() -> TableValuedAlias:
    """Usage rows from a JSON array of objects by column (`u_rows`), typed by the table's
    row. Built on first use: Postgres's dialect is imported only where the database is
    Postgres (about 2.4 MB of a worker on SQLite)."""
    from sqlalchemy.dialects.postgresql import JSONB

    return func.jsonb_populate_recordset(
        literal_column(f"NULL::{USAGE.name}"), bindparam("u_rows", type_=JSONB)
    ).table_valued(*_USAGE_COLUMNS)


def _usage_rows(*where: Any) -> CTE:
    records = _usage_records()
    rows = select(*[records.c[n] for n in _USAGE_COLUMNS]).where(*where)
    return insert(USAGE).from_select(_USAGE_COLUMNS, rows).returning(USAGE.c.id).cte("usage_added")


# One past the conversation's (p_cid) last stored message, 0 when it has none: the
# position is the greater of this and `next_position`. A release before `next_position`
# appends without moving it, so during a rolling upgrade an older instance's append left
# the counter behind, and every later append to that conversation would have taken a
# used position (a unique violation, for good). An index lookup in the same statement,
# not a round trip; on Postgres it reads the statement's snapshot, and an append that
# waited for the row lock takes the counter of the row it waited for, which is ahead.
_AFTER_LAST = (
    select(func.coalesce(func.max(_m.position) + 1, 0))
    .where(_m.conversation_id == bindparam("p_cid"))
    .scalar_subquery()
)

# The version of the conversation's row (p_cid) an UPDATE of it finds, and the one its
# statement's snapshot holds: they differ when the UPDATE waited for the row lock while
# another change to the row committed (Postgres' system column).
_ROW_VERSION: ColumnElement[Any] = literal_column(f"{CONVERSATIONS.name}.xmin")
_SEEN = CONVERSATIONS.alias("seen")
_SEEN_VERSION = (
    select(literal_column(f"{_SEEN.name}.xmin"))
    .where(_SEEN.c.id == bindparam("p_cid"))
    .scalar_subquery()
)

# How many of the conversation's (p_cid) messages have the id p_mid (0 or 1).
_TAKEN = (
    select(func.count())
    .where(_m.conversation_id == bindparam("p_cid"), _m.id == bindparam("p_mid"))
    .scalar_subquery()
)

# Plain INSERTs: the values are given as parameters named after the columns.
INSERT_MESSAGE: Insert = insert(MESSAGES)
INSERT_RUN: Insert = insert(RUNS)
INSERT_USAGE: Insert = insert(USAGE)

# A feed entry's values, numbered after the conversation's last entry in the same statement.
_FEED_ENTRY: dict[str, Any] = {
    "conversation_id": sql_cast(bindparam("p_cid"), FEED.c.conversation_id.type),
    "seq": select(func.coalesce(func.max(FEED.c.seq), 0) + 1)
    .where(FEED.c.conversation_id == bindparam("p_cid"))
    .scalar_subquery(),
    "kind": sql_cast(bindparam("p_kind"), FEED.c.kind.type),
    "item_id": sql_cast(bindparam("p_item"), FEED.c.item_id.type),
    "run_id": sql_cast(bindparam("p_run"), FEED.c.run_id.type),
    "data": sql_cast(bindparam("p_data", type_=FEED.c.data.type), FEED.c.data.type),
    "created_at": sql_cast(
        bindparam("p_now", type_=FEED.c.created_at.type), FEED.c.created_at.type
    ),
}

# A feed entry numbered after the conversation's last one, in the same statement.
INSERT_FEED_ENTRY: Insert = insert(FEED).values(
    conversation_id=bindparam("p_cid"),
    seq=_FEED_ENTRY["seq"],
    kind=bindparam("p_kind"),
    item_id=bindparam("p_item"),
    run_id=bindparam("p_run"),
    data=bindparam("p_data", type_=FEED.c.data.type),
    created_at=bindparam("p_now", type_=FEED.c.created_at.type),
)

# A run's columns set from parameters named after them, for the run p_run.
UPDATE_RUN: Update = update(RUNS).where(RUNS.c.id == bindparam("p_run"))

# One owner's conversation (p_cid, p_owner), all columns.
CONVERSATION = select(CONVERSATIONS).where(
    _c.id == bindparam("p_cid"), _c.owner_id == bindparam("p_owner")
)

# The current messages of a conversation (p_cid, p_owner), in order.
HISTORY = (
    select(MESSAGES)
    .where(
        _m.conversation_id == bindparam("p_cid"),
        _m.owner_id == bindparam("p_owner"),
        _m.superseded_at.is_(None),
    )
    .order_by(_m.position)
)
