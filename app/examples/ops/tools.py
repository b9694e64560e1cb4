"""The example operations tools (see the package docstring). Handlers echo their call."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from app.examples.ops.phrasing import SAYINGS, WORDS
from app.tools.base import Policy, ServerTool, ToolArgs, ToolContext
from app.tools.registry import ToolRegistry


class TargetArgs(ToolArgs):
    name: str | None = Field(default=None, description="What the call is about, by name.")
    environment: str | None = Field(default=None, description="Environment, e.g. staging.")


class QueryArgs(ToolArgs):
    query: str = Field(default="", description="What to look for.")
    since: str | None = Field(default=None, description="Start of the period, e.g. 1h, 7d.")


async def _echo(args: ToolArgs, ctx: ToolContext) -> dict[str, Any]:
    return {"example": True, "tool_call_id": ctx.tool_call_id, "args": args.model_dump()}


# name, description (the model reads it), Russian description, keywords, mutates, policy
Spec = tuple[str, str, str, tuple[str, ...], bool, Policy]

SPECS: list[Spec] = [
    ("list_dashboards", "List the monitoring dashboards and their owners.",
     "Показать список дашбордов мониторинга и их владельцев.",
     ("dashboard", "dashboards", "дашборд", "дашборды", "панель мониторинга"), False, "auto"),
    ("create_dashboard", "Create a monitoring dashboard with charts for chosen metrics.",
     "Создать новый дашборд мониторинга с графиками выбранных метрик.",
     ("dashboard", "dashboards", "дашборд", "панель мониторинга"), True, "auto"),
    ("share_dashboard", "Share a dashboard with a user or team (view or edit access).",
     "Поделиться дашбордом с пользователем или командой, дать доступ к дашборду.",
     ("dashboard", "dashboards", "дашборд", "share", "поделиться", "поделись"), True, "auto"),
    ("list_environments", "List the environments (dev, staging, production) and their state.",
     "Показать список окружений (dev, staging, production) и их состояние.",
     ("environment", "environments", "env", "envs", "окружение", "среда", "стенд", "стенды",
      "staging", "стейджинг"), False, "auto"),
    ("create_environment", "Create a new environment from a template (e.g. a preview env).",
     "Создать новое окружение или стенд из шаблона.",
     ("environment", "environments", "env", "окружение", "среда", "стенд"), True, "confirm"),
    ("delete_environment", "Delete an environment and everything deployed in it.",
     "Удалить окружение (стенд) со всем, что в нём развёрнуто.",
     ("environment", "environments", "env", "окружение", "среда", "стенд"), True, "confirm"),
    ("request_access", "Request access to a system, repository or environment for a user.",
     "Запросить доступ к системе, репозиторию или окружению; заявка на доступ.",
     ("access", "permission", "permissions", "доступ", "права", "заявка на доступ"),
     True, "auto"),
    ("approve_access_request", "Approve or deny a pending access request.",
     "Одобрить или отклонить заявку на доступ.",
     ("access request", "access requests", "заявка", "заявку", "доступ"), True, "confirm"),
    ("revoke_access", "Revoke a user's access to a system or environment.",
     "Отозвать у пользователя доступ к системе или окружению, забрать права.",
     ("access", "revoke", "permissions", "доступ", "права", "отозвать", "отзови"),
     True, "confirm"),
    ("list_backups", "List database backups with their time, size and status.",
     "Показать список резервных копий (бэкапов) базы данных: время, размер, статус.",
     ("backup", "backups", "snapshot", "snapshots", "бэкап", "бекап", "резервная копия",
      "резервные копии"), False, "auto"),
    ("create_backup", "Create a backup (snapshot) of a database now.",
     "Сделать резервную копию (бэкап) базы данных прямо сейчас.",
     ("backup", "backups", "back up", "snapshot", "бэкап", "бекап", "резервная копия"),
     True, "auto"),
    ("restore_backup", "Restore a database from a backup; overwrites current data.",
     "Восстановить базу данных из резервной копии (бэкапа), перезаписав данные.",
     ("backup", "backups", "snapshot", "restore", "бэкап", "бекап", "резервная копия",
      "восстанови", "восстановить"), True, "confirm"),
    ("delete_backup", "Delete a backup permanently.",
     "Удалить резервную копию (бэкап) навсегда.",
     ("backup", "backups", "бэкап", "бекап", "резервная копия"), True, "confirm"),
    ("get_schema", "Show a database schema: tables, columns, types and indexes.",
     "Показать схему базы данных: таблицы, колонки, типы и индексы.",
     ("schema", "schemas", "table", "tables", "column", "columns", "схема", "таблица",
      "колонка", "столбец"), False, "auto"),
    ("migrate_schema", "Apply a schema migration to a database.",
     "Применить миграцию схемы базы данных.",
     ("schema", "migration", "migrations", "migrate", "схема", "миграция", "мигрировать"),
     True, "confirm"),
    ("deploy_service", "Deploy a service version (release) to an environment.",
     "Задеплоить (выкатить) версию сервиса на окружение, сделать релиз.",
     ("deploy", "deployment", "deployments", "release", "rollout", "redeploy", "ship",
      "деплой", "задеплой", "задеплоить", "передеплой", "выкатить", "выкати", "раскатай",
      "релиз", "сборка"), True, "confirm"),
    ("rollback_deployment", "Roll back a service to its previous deployed version.",
     "Откатить сервис на предыдущую версию, откат деплоя.",
     ("rollback", "roll back", "revert", "deployment", "откат", "откатить", "откати",
      "деплой"), True, "confirm"),
    ("get_deployment_status", "Show the status and history of a service's deployments.",
     "Показать статус и историю деплоев сервиса.",
     ("deployment", "deployments", "deploy", "rollout", "status", "деплой", "статус",
      "релиз"),
     False, "auto"),
    ("search_logs", "Search service logs by text and time range.",
     "Искать в логах сервиса по тексту и периоду времени.",
     ("log", "logs", "error", "errors", "лог", "логи", "ошибка"), False, "auto"),
    ("query_metrics", "Query a metric (latency, error rate, CPU, memory) over a time range.",
     "Получить метрику (задержка, доля ошибок, CPU, память) за период.",
     ("metric", "metrics", "latency", "cpu", "memory", "метрика", "метрики", "задержка",
      "память", "нагрузка"), False, "auto"),
    ("create_incident", "Open an incident, page the on-call engineer and start a timeline.",
     "Завести инцидент, вызвать дежурного инженера.",
     ("incident", "incidents", "outage", "on-call", "oncall", "page", "инцидент", "авария",
      "дежурный", "дежурного"), True, "auto"),
    ("toggle_feature_flag", "Turn a feature flag on or off for an environment.",
     "Включить или выключить фича-флаг на окружении.",
     ("feature flag", "flag", "flags", "toggle", "флаг", "фича", "фичефлаг"), True, "confirm"),
    ("invite_user", "Invite a user to the workspace with a role.",
     "Пригласить пользователя в рабочее пространство с ролью.",
     ("invite", "invitation", "user", "users", "teammate", "пригласить", "пригласи",
      "приглашение", "пользователь", "коллега"), True, "auto"),
    ("rotate_secret", "Rotate a secret (API key, password, token) and update its consumers.",
     "Сменить секрет (API-ключ, пароль, токен) и обновить его у сервисов.",
     ("secret", "secrets", "password", "token", "api key", "rotate", "секрет", "пароль",
      "токен", "ключ"), True, "confirm"),
]  # fmt: skip


def tools() -> list[ServerTool[Any]]:
    built: list[ServerTool[Any]] = []
    for name, description, russian, keywords, mutates, policy in SPECS:
        args_model = QueryArgs if name in ("search_logs", "query_metrics") else TargetArgs
        built.append(
            ServerTool(
                name=name,
                description=description,
                args_model=args_model,
                handler=_echo,
                mutates=mutates,
                policy=policy,
                keywords=(*keywords, *WORDS.get(name, ())),
                examples=(russian, *SAYINGS.get(name, ())),
            )
        )
    return built


def register(registry: ToolRegistry) -> None:
    for tool in tools():
        registry.register(tool)
