"""Held-out requests for the router benchmark: never used to tune the router.

Written in one sitting (2026-12-01, before looking at the example tools' keywords,
examples or the negation rules, and before any run), to stand in for the requests the
router will meet from outside. `python -m bench.router` reports them apart from the
tuned set (`bench/router_requests.py`). Changes to the router may be judged by them but
never made for one of them: when a request here is missed, the fix must be general (a
description, a keyword family, a rule), and the figures before and after are both kept.
Kinds as in `router_requests` (plain, synonym, typo, inflection, negation, trap, multi).
"""

from __future__ import annotations

from bench.router_requests import Case, _cases

EN_PLAIN = [
    ("list_environments", "what environments do we currently have running?"),
    ("create_environment", "provision a temporary test environment for the load test"),
    ("deploy_service", "ship notifications v1.8 to staging"),
    ("create_dashboard", "set up a dashboard tracking signups per hour"),
    ("invite_user", "add jane@corp.io to our workspace"),
    ("find_nodes", "who in the graph is connected to Alice?"),
    ("list_capabilities", "what kinds of things can you help me with?"),
]

EN_SYNONYM = [
    ("search_logs", "grep the nginx access log for 502s from this morning"),
    ("search_logs", "pull up the error output of the billing cron job"),
    ("query_metrics", "what's the average response time of checkout this week?"),
    ("create_incident", "the site returns 503 for everyone, declare a major outage"),
    ("create_incident", "file a sev2 for the slow search results"),
    ("request_access", "I'd like write permission on the infra repo"),
    ("approve_access_request", "sign off on Priya's request to read the audit logs"),
    ("revoke_access", "take away Dmitri's admin rights"),
    ("rotate_secret", "regenerate the API key for the mailing service"),
    ("rotate_secret", "the aws credentials are compromised"),
    ("toggle_feature_flag", "flip the new-pricing toggle on for internal users"),
    ("deploy_service", "promote the release candidate of billing to production"),
    ("rollback_deployment", "go back to the previous build of the gateway, this one leaks memory"),
    ("get_deployment_status", "has the payments rollout completed yet?"),
    ("delete_environment", "decommission the old demo environment"),
    ("create_backup", "snapshot the analytics database before the upgrade"),
    ("restore_backup", "recover the deleted orders from last night's dump"),
    ("list_backups", "show me what snapshots exist for the inventory db"),
    ("delete_backup", "purge the backups older than 90 days"),
    ("get_schema", "what's the data type of the created_at column in events?"),
    ("migrate_schema", "bump the customers table to schema version 12"),
    ("share_dashboard", "send the on-call dashboard to the support team"),
    ("list_dashboards", "where can I find our existing grafana boards?"),
    ("add_node", "put a new entity named Billing Service into the graph"),
    ("set_property", "update the Kafka node: owner should be team Data"),
    ("delete_node", "drop the Legacy CRM node from the knowledge graph"),
    ("get_graph", "visualize everything in the knowledge base graph"),
]

EN_TYPO = [
    ("rollback_deployment", "rollbak the gateway release"),
    ("create_backup", "craete a backup of the users db"),
    ("search_logs", "serach the logs for 'disk full'"),
    ("migrate_schema", "run the migartion on staging"),
    ("revoke_access", "revokee Bob's acces to prod"),
]

EN_TRAP = [
    ("query_metrics", "graph the disk usage on the db hosts"),
    ("connect", "draw an edge between Checkout and Inventory"),
    ("list_environments", "list environments where the envoy sidecar is enabled"),
    ("query_metrics", "p95 latency of the flagsmith proxy"),
    ("search_logs", "search logs of the dashboard-renderer service"),
    ("get_deployment_status", "status of the deployer bot's last deployment"),
]

EN_INFLECTION = [
    ("restore_backup", "the db needs restoring from Sunday's backup"),
    ("delete_environment", "deleting the stale preview environments now"),
    ("share_dashboard", "dashboards shared with finance? share the revenue one too"),
]

EN_MULTI = [
    ("create_backup migrate_schema", "back up the orders db, then run the schema migration"),
    (
        "deploy_service get_deployment_status",
        "deploy search 4.2 and tell me when the rollout is done",
    ),
    (
        "search_logs rollback_deployment",
        "check the logs for the crash and roll back the api if it's the new release",
    ),
    ("revoke_access rotate_secret", "revoke the contractor's access and rotate the keys he had"),
]

EN_NEGATION = [
    ("delete_environment", "please don't tear down staging"),
    ("deploy_service", "hold off on deploying billing until Monday"),
    ("list_backups", "I don't want to restore anything, just check which backups exist"),
    ("rotate_secret", "do not rotate the stripe key, it's in use"),
    ("revoke_access", "don't remove Ann's access, she's still on the team"),
    ("toggle_feature_flag", "leave the beta flag on, don't touch it"),
    ("delete_backup", "never purge the monthly backups"),
    ("rollback_deployment", "no rollback please, the release is fine"),
]

RU_PLAIN = [
    ("list_environments", "какие окружения у нас сейчас работают?"),
    ("create_environment", "подготовь временный тестовый стенд под нагрузочное тестирование"),
    ("deploy_service", "выложи notifications 1.8 на стейджинг"),
    ("create_dashboard", "заведи дашборд с регистрациями по часам"),
    ("invite_user", "добавь jane@corp.io в наше пространство"),
    ("find_nodes", "кто в графе связан с Алисой?"),
    ("list_capabilities", "с чем ты вообще можешь помочь?"),
]

RU_SYNONYM = [
    ("search_logs", "глянь логи nginx на 502 за утро"),
    ("search_logs", "что падало в крон-задаче биллинга? посмотри вывод"),
    ("query_metrics", "какое среднее время ответа у checkout за неделю?"),
    ("query_metrics", "сколько места занято на дисках базы?"),
    ("create_incident", "сайт отдаёт 503 всем, объявляй крупную аварию"),
    ("create_incident", "заведи sev2 по медленному поиску"),
    ("request_access", "хочу права на запись в репозиторий infra"),
    ("approve_access_request", "подтверди заявку Прии на чтение аудита"),
    ("revoke_access", "лиши Дмитрия админских прав"),
    ("rotate_secret", "перевыпусти API-ключ почтового сервиса"),
    ("rotate_secret", "ключи aws скомпрометированы"),
    ("toggle_feature_flag", "включи переключатель new-pricing для внутренних пользователей"),
    ("deploy_service", "продвинь релиз-кандидат биллинга в продакшен"),
    ("rollback_deployment", "верни предыдущую сборку шлюза, эта течёт по памяти"),
    ("get_deployment_status", "раскатка платежей уже завершилась?"),
    ("delete_environment", "выведи из эксплуатации старый демо-стенд"),
    ("create_backup", "сделай снапшот базы аналитики перед обновлением"),
    ("restore_backup", "восстанови удалённые заказы из ночного дампа"),
    ("list_backups", "какие снапшоты есть у базы склада?"),
    ("delete_backup", "почисти бэкапы старше 90 дней"),
    ("get_schema", "какой тип у колонки created_at в events?"),
    ("migrate_schema", "обнови таблицу клиентов до версии схемы 12"),
    ("share_dashboard", "отправь дашборд дежурных команде поддержки"),
    ("list_dashboards", "где найти наши доски в графане?"),
    ("add_node", "заведи в графе новую сущность Billing Service"),
    ("set_property", "у узла Kafka владельцем должна быть команда Data"),
    ("delete_node", "выкинь узел Legacy CRM из графа знаний"),
    ("get_graph", "визуализируй весь граф базы знаний"),
]

RU_TYPO = [
    ("rollback_deployment", "откоти релиз шлюза"),
    ("create_backup", "сделай бэкпа базы пользователей"),
    ("search_logs", "поищи в логха 'disk full'"),
    ("migrate_schema", "запусти миграцю на стейджинге"),
    ("revoke_access", "отзави доступ у Боба к проду"),
]

RU_TRAP = [
    ("list_environments", "в каких окружениях включён сайдкар envoy?"),
    ("query_metrics", "задержка p95 у прокси flagsmith"),
    ("search_logs", "логи сервиса dashboard-renderer"),
    ("get_deployment_status", "статус последнего деплоя бота-деплоера"),
    ("connect", "проведи ребро между Checkout и Inventory"),
]

RU_INFLECTION = [
    ("restore_backup", "базу нужно восстановить из воскресного бэкапа"),
    ("delete_environment", "удаляем устаревшие превью-окружения"),
    ("share_dashboard", "дашбордами с финансами делились? поделись и выручкой"),
]

RU_MULTI = [
    ("create_backup migrate_schema", "забэкапь базу заказов, потом прогони миграцию схемы"),
    (
        "deploy_service get_deployment_status",
        "задеплой поиск 4.2 и скажи, когда раскатка закончится",
    ),
    (
        "search_logs rollback_deployment",
        "посмотри логи падения и откати api, если дело в новом релизе",
    ),
    ("revoke_access rotate_secret", "отзови доступ подрядчика и смени ключи, которые у него были"),
]

RU_NEGATION = [
    ("delete_environment", "пожалуйста, не сноси стейджинг"),
    ("deploy_service", "повремени с деплоем биллинга до понедельника"),
    ("list_backups", "ничего не восстанавливай, просто проверь, какие есть бэкапы"),
    ("rotate_secret", "не меняй ключ stripe, он используется"),
    ("revoke_access", "не забирай доступ у Ани, она ещё в команде"),
    ("toggle_feature_flag", "оставь бета-флаг включённым, не трогай его"),
    ("delete_backup", "ни в коем случае не удаляй месячные бэкапы"),
    ("rollback_deployment", "откатывать не нужно, релиз в порядке"),
]

HELD_OUT: list[Case] = [
    *_cases("en", "plain", EN_PLAIN),
    *_cases("en", "synonym", EN_SYNONYM),
    *_cases("en", "typo", EN_TYPO),
    *_cases("en", "trap", EN_TRAP),
    *_cases("en", "inflection", EN_INFLECTION),
    *_cases("en", "multi", EN_MULTI),
    *_cases("en", "negation", EN_NEGATION),
    *_cases("ru", "plain", RU_PLAIN),
    *_cases("ru", "synonym", RU_SYNONYM),
    *_cases("ru", "typo", RU_TYPO),
    *_cases("ru", "trap", RU_TRAP),
    *_cases("ru", "inflection", RU_INFLECTION),
    *_cases("ru", "multi", RU_MULTI),
    *_cases("ru", "negation", RU_NEGATION),
]

# A second batch, written (2026-12-01 14:30 UTC) after the first batch's misses were seen
# and before the catalogue's vocabulary was widened for them, and run against the router
# only as a whole figure until that work was done: the first batch's "after" figure is
# flattered by its misses having been read, this one's is not.
EN_SECOND = [
    ("list_dashboards", "do we already have a board for kafka lag?"),
    ("create_dashboard", "can you put together a dashboard of cache hit ratio"),
    ("share_dashboard", "give the data team view access to the churn dashboard"),
    ("list_environments", "is the perf environment still alive?"),
    ("create_environment", "stand up a new env called hotfix-3"),
    ("delete_environment", "nuke the feature-x environment, the branch is merged"),
    ("request_access", "I need read-only access to the grafana org"),
    ("approve_access_request", "accept the pending request from Lena for the vpn"),
    ("revoke_access", "offboard Mark: drop all his permissions"),
    ("list_backups", "when did the nightly backup of payments last succeed?"),
    ("create_backup", "dump the crm database to a backup before I drop the table"),
    ("restore_backup", "roll the inventory db back to Friday's backup"),
    ("delete_backup", "clean up backup files of the retired analytics db"),
    ("get_schema", "list the columns of the sessions table"),
    ("migrate_schema", "apply migration 0042 to production"),
    ("deploy_service", "release auth 5.0 to the prod cluster"),
    ("rollback_deployment", "the new version of search is broken, revert it"),
    ("get_deployment_status", "what version of billing is live right now?"),
    ("search_logs", "find 'OutOfMemoryError' in the indexer output since midnight"),
    ("query_metrics", "how many 5xx per minute is the edge returning?"),
    ("create_incident", "start an incident, the queue is backing up and orders are stuck"),
    ("toggle_feature_flag", "enable new-onboarding for 5% of traffic"),
    ("invite_user", "send a workspace invitation to the new QA engineer"),
    ("rotate_secret", "the slack webhook secret was posted publicly, rotate it"),
    ("find_nodes", "which entities in the graph mention Redis?"),
    ("add_node", "register a new service node called Ledger"),
    ("connect", "Ledger depends on Postgres: record that relation"),
    ("list_capabilities", "what tools are available to you?"),
]

EN_SECOND_NEGATION = [
    ("delete_backup", "whatever you do, do not delete yesterday's backup"),
    ("deploy_service", "don't ship anything to prod on Friday"),
    ("restore_backup", "let's not restore from the backup, it's too old"),
    ("migrate_schema", "skip the migration for now"),
]

EN_SECOND_MULTI = [
    ("list_environments delete_environment", "show me every environment and remove the stale ones"),
    (
        "create_incident query_metrics",
        "latency is through the roof, open an incident and pull the p99 graph",
    ),
]

RU_SECOND = [
    ("list_dashboards", "есть у нас уже доска по лагу кафки?"),
    ("create_dashboard", "собери дашборд по доле попаданий в кэш"),
    ("share_dashboard", "дай команде данных просмотр дашборда оттока"),
    ("list_environments", "перф-окружение ещё живо?"),
    ("create_environment", "подними новое окружение hotfix-3"),
    ("delete_environment", "грохни окружение feature-x, ветку уже смержили"),
    ("request_access", "мне нужен доступ только на чтение к организации в графане"),
    ("approve_access_request", "прими заявку Лены на vpn"),
    ("revoke_access", "Марк уходит: сними с него все права"),
    ("list_backups", "когда последний раз успешно прошёл ночной бэкап платежей?"),
    ("create_backup", "сними дамп базы crm перед удалением таблицы"),
    ("restore_backup", "верни базу склада к пятничному бэкапу"),
    ("delete_backup", "почисти файлы бэкапов выведенной базы аналитики"),
    ("get_schema", "перечисли столбцы таблицы sessions"),
    ("migrate_schema", "накати миграцию 0042 на прод"),
    ("deploy_service", "выпусти auth 5.0 в прод-кластер"),
    ("rollback_deployment", "новая версия поиска сломана, верни назад"),
    ("get_deployment_status", "какая версия биллинга сейчас в проде?"),
    ("search_logs", "найди OutOfMemoryError в выводе индексатора с полуночи"),
    ("query_metrics", "сколько 5xx в минуту отдаёт edge?"),
    ("create_incident", "начинай инцидент, очередь растёт и заказы висят"),
    ("toggle_feature_flag", "включи new-onboarding на 5% трафика"),
    ("invite_user", "отправь приглашение в пространство новому тестировщику"),
    ("rotate_secret", "секрет вебхука slack засветился в чате, ротируй"),
    ("find_nodes", "какие сущности в графе упоминают Redis?"),
    ("add_node", "заведи новый узел сервиса Ledger"),
    ("connect", "Ledger зависит от Postgres: запиши эту связь"),
    ("list_capabilities", "какие инструменты тебе доступны?"),
]

RU_SECOND_NEGATION = [
    ("delete_backup", "что бы ни было, не удаляй вчерашний бэкап"),
    ("deploy_service", "в пятницу ничего в прод не выкатывай"),
    ("restore_backup", "давай не будем восстанавливать из бэкапа, он старый"),
    ("migrate_schema", "миграцию пока пропусти"),
]

RU_SECOND_MULTI = [
    ("list_environments delete_environment", "покажи все окружения и удали устаревшие"),
    (
        "create_incident query_metrics",
        "задержка зашкаливает, заведи инцидент и подтяни график p99",
    ),
]

HELD_OUT_SECOND: list[Case] = [
    *_cases("en", "synonym", EN_SECOND),
    *_cases("en", "negation", EN_SECOND_NEGATION),
    *_cases("en", "multi", EN_SECOND_MULTI),
    *_cases("ru", "synonym", RU_SECOND),
    *_cases("ru", "negation", RU_SECOND_NEGATION),
    *_cases("ru", "multi", RU_SECOND_MULTI),
]
