"""How people ask for the example operations tools, beyond each tool's own description.

`WORDS` are more keyword forms: the everyday and jargon names of each thing and action
(`sev1`, `teardown`, `выложи`, `креды`). `SAYINGS` are more passages for the embedding
fallback: one English and one Russian line per tool in the words users type rather than
the words a description uses ("hide the new page from users" is a feature flag). Both
were written per tool for the whole catalogue, as vocabulary of the domain, not for any
one request of the benchmark.
"""

from __future__ import annotations

WORDS: dict[str, tuple[str, ...]] = {
    "list_dashboards": ("board", "boards", "grafana", "доска", "доски"),
    "create_dashboard": ("board", "доска"),
    "share_dashboard": ("board", "доска"),
    "list_environments": ("sandbox", "sandboxes", "песочница", "песочницы"),
    "create_environment": ("sandbox", "provision", "spin up", "stand up", "песочница"),
    "delete_environment": ("sandbox", "tear down", "teardown", "decommission", "destroy",
                           "песочница", "снеси", "снести", "сносить"),
    "request_access": ("grant", "let me in", "доступы"),
    "approve_access_request": ("approve", "deny", "одобри", "одобрить", "отклони"),
    "revoke_access": ("offboard", "offboarding", "cut off", "отключи доступ"),
    "list_backups": ("dump", "dumps", "дамп", "дампы", "снапшот", "снапшоты"),
    "create_backup": ("dump", "дамп", "снапшот", "забэкапь"),
    "restore_backup": ("recover", "dump", "дамп", "снапшот", "восстановление"),
    "delete_backup": ("purge", "дамп", "снапшот"),
    "get_schema": ("fields", "index", "indexes", "поля", "индексы", "структура таблицы"),
    "migrate_schema": ("alter table", "накати", "накатить"),
    "deploy_service": ("promote", "go live", "выложи", "выложить", "залей", "залить",
                       "раскатка", "раскатить"),
    "rollback_deployment": ("downgrade", "previous version", "предыдущую версию"),
    "get_deployment_status": ("rollout status", "раскатка", "version live"),
    "search_logs": ("stack trace", "stacktrace", "traceback", "exception", "exceptions",
                    "grep", "стектрейс", "стектрейсы", "исключение", "исключения"),
    "query_metrics": ("disk", "usage", "throughput", "rps", "p95", "p99", "response time",
                      "диск", "диски", "время ответа"),
    "create_incident": ("sev", "sev1", "sev2", "sev3", "severity", "pager", "инцидент"),
    "toggle_feature_flag": ("feature", "toggle", "switch", "переключатель", "тогл"),
    "invite_user": ("onboard", "invitation", "пригласить"),
    "rotate_secret": ("credentials", "creds", "leaked", "compromised", "креды", "утек",
                      "скомпрометирован", "ротируй"),
}  # fmt: skip

SAYINGS: dict[str, tuple[str, ...]] = {
    "list_dashboards": (
        "Which monitoring boards and Grafana screens exist, who owns them.",
        "Какие есть доски и экраны мониторинга, графики в графане.",
    ),
    "create_dashboard": (
        "Build a new board with charts and graphs to watch some numbers.",
        "Собрать новую доску с графиками, чтобы следить за показателями.",
    ),
    "share_dashboard": (
        "Let a colleague or team see or edit my board; send them the dashboard.",
        "Открыть коллегам или команде мою доску, отправить им дашборд.",
    ),
    "list_environments": (
        "Which stands and sandboxes are up, is staging alive, what runs where.",
        "Какие стенды и песочницы подняты, живо ли окружение, что где работает.",
    ),
    "create_environment": (
        "Spin up a fresh isolated copy of staging or a sandbox for a branch.",
        "Поднять свежую изолированную копию стейджинга или песочницу под ветку.",
    ),
    "delete_environment": (
        "Tear down, destroy or get rid of a sandbox or preview stand no longer needed.",
        "Снести, убрать или уничтожить ненужную песочницу или превью-стенд.",
    ),
    "request_access": (
        "I can't get in; give me rights or permission to open a repo, cluster or console.",
        "Не могу попасть; дай мне права или разрешение на репозиторий, кластер, консоль.",
    ),
    "approve_access_request": (
        "Someone waits for my OK to get in: accept, sign off or reject their request.",
        "Кто-то ждёт моего ок на доступ: принять, подтвердить или отклонить его заявку.",
    ),
    "revoke_access": (
        "Someone left the company: take away their rights, cut them off everywhere.",
        "Сотрудник ушёл: лишить его прав, отключить отовсюду, забрать доступы.",
    ),
    "list_backups": (
        "Which copies and snapshots of a database exist, when the last dump was taken.",
        "Какие копии и снапшоты базы есть, когда снимали последний дамп.",
    ),
    "create_backup": (
        "Save a copy of the data before touching it: dump or snapshot the database now.",
        "Сохранить копию данных перед изменениями: снять дамп или снапшот базы сейчас.",
    ),
    "restore_backup": (
        "Bring a database back to how it was at a date; recover lost rows from a copy.",
        "Вернуть базу в состояние на дату, достать потерянные данные из копии.",
    ),
    "delete_backup": (
        "Clean up, purge or throw away old copies and dumps of a database.",
        "Почистить, выбросить старые копии и дампы базы.",
    ),
    "get_schema": (
        "What fields, columns, types and indexes a table has; describe its structure.",
        "Какие поля, столбцы, типы и индексы у таблицы; опиши её структуру.",
    ),
    "migrate_schema": (
        "Change a table's structure in a database: add a column, run the migration.",
        "Изменить структуру таблицы в базе: добавить колонку, накатить миграцию.",
    ),
    "deploy_service": (
        "Ship, push or roll out a new build or version of a service to prod or staging.",
        "Выложить, залить или раскатить новую сборку или версию сервиса на прод.",
    ),
    "rollback_deployment": (
        "The new release broke something: go back to the old version, undo the release.",
        "Новый релиз что-то сломал: вернуть старую версию, отменить выкладку.",
    ),
    "get_deployment_status": (
        "Did the rollout finish, which version is live, how is the release going.",
        "Закончилась ли раскатка, какая версия сейчас в проде, как идёт релиз.",
    ),
    "search_logs": (
        "What a service printed or wrote: errors, exceptions, stack traces at some time.",
        "Что сервис писал или выводил: ошибки, исключения, стектрейсы в какое-то время.",
    ),
    "query_metrics": (
        "How much CPU, memory or disk a service uses, its request rate or response time.",
        "Сколько процессора, памяти или диска ест сервис, сколько запросов, время ответа.",
    ),
    "create_incident": (
        "Something is down or on fire: raise a sev1 or sev2, wake up whoever is on duty.",
        "Что-то упало или горит: поднять тревогу, sev1, разбудить того, кто на смене.",
    ),
    "toggle_feature_flag": (
        "Hide or show a new feature or page for users; switch a toggle on or off.",
        "Спрятать или показать новую фичу или страницу пользователям, переключатель.",
    ),
    "invite_user": (
        "Bring a new colleague, designer or engineer into the workspace.",
        "Добавить нового коллегу, дизайнера или инженера в рабочее пространство.",
    ),
    "rotate_secret": (
        "A key, token or password leaked or expires: replace it with a fresh one.",
        "Ключ, токен или пароль утёк или истекает: заменить его на новый.",
    ),
}
