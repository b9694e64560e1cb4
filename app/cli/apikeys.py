"""`chat-bff apikey create|list|revoke`: API key management from a shell.

    chat-bff apikey create --owner svc-reports --name "nightly reports" --roles user,reports
    chat-bff apikey list [--owner svc-reports] [--all]
    chat-bff apikey revoke key_...

`create` prints the key once; only its SHA-256 digest is stored. Actions are audited with
the actor `cli:<login name>` (or `--actor`).
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from app.auth.key_management import create_api_key, list_api_keys, revoke_api_key
from app.domain.errors import NotFound
from app.settings import Settings
from app.store.database import Database
from app.store.db import create_engine

Subparsers = Any  # argparse's _SubParsersAction is private


def _actor(args: argparse.Namespace) -> str:
    actor: str | None = args.actor
    return actor or f"cli:{getpass.getuser()}"


async def _apikey(args: argparse.Namespace, settings: Settings) -> int:
    engine = create_engine(settings.database_url)
    db = Database(engine)
    try:
        if args.action == "create":
            roles = [r.strip() for r in args.roles.split(",") if r.strip()]
            record, key = await create_api_key(
                db,
                name=args.name,
                owner_id=args.owner,
                roles=roles,
                created_by=_actor(args),
            )
            print(f"id:    {record.id}")
            print(f"owner: {record.owner_id}  roles: {','.join(record.roles)}")
            print(f"key:   {key}")
            print("Store the key now: it is not shown again.")
            return 0
        if args.action == "list":
            records = await list_api_keys(db, owner_id=args.owner, include_revoked=args.all)
            for r in records:
                state = f"revoked {r.revoked_at:%Y-%m-%d}" if r.revoked_at else "active"
                print(
                    f"{r.id}\t{r.display_prefix}...\t{r.owner_id}\t{','.join(r.roles)}\t"
                    f"{r.name}\t{r.created_at:%Y-%m-%d}\t{state}"
                )
            return 0
        try:
            record = await revoke_api_key(db, args.key_id, actor_id=_actor(args))
        except NotFound:
            print(f"no such key: {args.key_id}")
            return 1
        print(f"revoked {record.id} ({record.display_prefix}..., owner {record.owner_id})")
        return 0
    finally:
        await engine.dispose()


def add_apikey(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser("apikey", help="create, list or revoke API keys")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser("create", help="create a key and print it once")
    create.add_argument("--owner", required=True, help="caller id the key acts as")
    create.add_argument("--name", required=True, help="what the key is for")
    create.add_argument("--roles", default="user", help="comma-separated roles (default: user)")
    listing = actions.add_parser("list", help="list keys (never the keys themselves)")
    listing.add_argument("--owner", default=None, help="only this owner's keys")
    listing.add_argument("--all", action="store_true", help="include revoked keys")
    revoke = actions.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id", help="the key's id (key_...)")
    for sub in (create, revoke):
        sub.add_argument("--actor", default=None, help="who to record in the audit log")
    parser.set_defaults(handler=_apikey)
