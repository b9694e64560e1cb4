"""The labeled requests of the router benchmark (`bench/router.py`), in English and Russian.

Each entry: the request, its language, the tools that must all be in the routed subset,
and its kind: plain, synonym (words the keywords do not list), typo, inflection (Russian
word forms; English verb forms and plurals), negation (must never pre-select a mutating
tool), trap (a word that contains another tool's keyword, or a tool name's stem inside a
longer word), multi (two intents), unseen (paraphrases written after the last change to
the router and the catalogue, before being run). A bare "stop" or "отмена" names no tool:
its right set is the capabilities tool alone.
Written by hand against the example catalogue (`app.examples.graph` + `app.examples.ops`).
"""

from __future__ import annotations

from typing import NamedTuple


class Case(NamedTuple):
    text: str
    lang: str
    tools: tuple[str, ...]
    kind: str


def _cases(lang: str, kind: str, rows: list[tuple[str, str]]) -> list[Case]:
    return [Case(text, lang, tuple(tools.split()), kind) for tools, text in rows]


EN_PLAIN = [
    ("list_dashboards", "show me all dashboards"),
    ("list_dashboards", "which dashboards do we have?"),
    ("create_dashboard", "create a dashboard for checkout latency"),
    ("create_dashboard", "make a new dashboard with CPU and memory charts"),
    ("share_dashboard", "share the payments dashboard with the SRE team"),
    ("share_dashboard", "give Anna edit access to my dashboard"),
    ("list_environments", "list all environments"),
    ("list_environments", "what state is staging in?"),
    ("create_environment", "create a new preview environment for branch feat-42"),
    ("create_environment", "spin up an env for the demo"),
    ("delete_environment", "delete the preview environment pr-17"),
    ("delete_environment", "tear down the qa env, we are done with it"),
    ("request_access", "I need access to the billing repository"),
    ("request_access", "request permissions to the prod database for me"),
    ("approve_access_request", "approve Bob's access request"),
    ("approve_access_request", "deny the pending access requests from contractors"),
    ("revoke_access", "revoke Carol's access to production"),
    ("revoke_access", "remove John's permissions on the analytics cluster"),
    ("list_backups", "list the backups of the orders database"),
    ("list_backups", "when was the last backup taken?"),
    ("create_backup", "take a backup of the users db now"),
    ("create_backup", "make a snapshot of the orders database"),
    ("restore_backup", "restore the orders database from yesterday's backup"),
    ("restore_backup", "roll the db back to the snapshot from Monday"),
    ("delete_backup", "delete the backup from last year"),
    ("delete_backup", "remove old backups of the test database"),
    ("get_schema", "show me the schema of the orders table"),
    ("get_schema", "what columns does the users table have?"),
    ("migrate_schema", "apply the pending schema migration to staging"),
    ("migrate_schema", "run migrations on the billing database"),
    ("deploy_service", "deploy api version 2.4.1 to production"),
    ("deploy_service", "release the checkout service to staging"),
    ("rollback_deployment", "rollback the last deployment of the api"),
    ("rollback_deployment", "revert checkout to the previous version"),
    ("get_deployment_status", "what is the status of the api deployment?"),
    ("get_deployment_status", "show the deployment history of the search service"),
    ("search_logs", "search the logs for timeout errors in the last hour"),
    ("search_logs", "find 500 errors in the gateway logs"),
    ("query_metrics", "what is the p99 latency of checkout today?"),
    ("query_metrics", "show cpu usage of the api for the last 24h"),
    ("create_incident", "open an incident: payments are failing"),
    ("create_incident", "page the on-call engineer, the site is down"),
    ("toggle_feature_flag", "turn on the new-checkout feature flag in staging"),
    ("toggle_feature_flag", "disable the dark-mode flag for production"),
    ("invite_user", "invite maria@example.com to the workspace as a viewer"),
    ("invite_user", "add a new teammate with the editor role"),
    ("rotate_secret", "rotate the stripe api key"),
    ("rotate_secret", "change the database password for the reporting service"),
    ("find_nodes", "find nodes labeled Person in the graph"),
    ("find_nodes", "search the graph for anything about Kafka"),
    ("get_graph", "show me the whole knowledge graph"),
    ("get_graph", "draw the graph with all nodes and edges"),
    ("add_node", "add a node for the new team Atlas"),
    ("add_node", "create a node called Payments API"),
    ("connect", "connect Alice to the Atlas team with relation member_of"),
    ("connect", "link the Payments API node to the Postgres node"),
    ("set_property", "set the owner property of Payments API to Bob"),
    ("set_property", "change the attribute tier to gold on the Kafka node"),
    ("delete_node", "delete the node Old Service"),
    ("delete_node", "remove node Legacy Billing from the graph"),
    ("list_capabilities", "what can you do?"),
    ("list_capabilities", "which tools do you have?"),
]

EN_SYNONYM = [
    ("list_dashboards", "what monitoring boards exist?"),
    ("deploy_service", "ship the new build of the api to prod"),
    ("deploy_service", "push version 3.0 of search live"),
    ("rollback_deployment", "undo yesterday's release of checkout"),
    ("create_incident", "we have an outage, raise it"),
    ("query_metrics", "how much memory is the api eating?"),
    ("search_logs", "grep the output of the worker for 'connection refused'"),
    ("list_backups", "do we have any copies of the db from last week?"),
    ("rotate_secret", "our token leaked, issue a fresh one"),
    ("invite_user", "bring a colleague into the workspace"),
    ("get_deployment_status", "did the last rollout of search finish?"),
    ("get_schema", "describe the structure of the payments table"),
    ("request_access", "how do I get into the admin console?"),
    ("toggle_feature_flag", "switch off the beta feature for everyone"),
    ("find_nodes", "look up entities related to Kafka"),
    ("list_capabilities", "help, what are you able to do here?"),
]

EN_TYPO = [
    ("list_dashboards", "show the dashbaords"),
    ("deploy_service", "deplyo the api to staging"),
    ("get_deployment_status", "status of the deplyoment"),
    ("list_environments", "list the enviroments"),
    ("list_backups", "list the bakcups"),
    ("restore_backup", "restroe the db from backup"),
    ("rotate_secret", "rotate the secrte for stripe"),
    ("create_incident", "open an incidnet for payments"),
    ("migrate_schema", "apply the migraton to prod"),
    ("query_metrics", "show the latnecy metrics"),
    ("search_logs", "search the lgos for errors"),
    ("revoke_access", "revoke acess for Bob"),
]

EN_NEGATION = [
    ("delete_backup", "don't delete the backup"),
    ("delete_backup", "do not remove any backups, just list them"),
    ("restore_backup", "don't restore the backup yet"),
    ("deploy_service", "do not deploy the api today"),
    ("deploy_service", "stop the deployment of checkout"),
    ("delete_environment", "never delete the production environment"),
    ("rollback_deployment", "don't roll back the release"),
    ("revoke_access", "don't revoke Bob's access"),
    ("delete_node", "do not delete the node Payments API"),
    ("toggle_feature_flag", "don't turn off the checkout flag"),
    ("rotate_secret", "cancel the secret rotation"),
    ("migrate_schema", "don't run the migration on prod"),
    ("create_incident", "no need to open an incident"),
    ("invite_user", "don't invite the contractor yet"),
    ("list_capabilities", "stop"),
    ("list_capabilities", "cancel"),
]

EN_TRAP = [
    ("list_environments", "which environment runs the newest build?"),
    ("list_capabilities", "what tools do you have?"),
    ("get_schema", "show the table schemas"),
    ("query_metrics", "metrics for the api please"),
    ("search_logs", "logs of the login service"),
    ("list_dashboards", "dashboards owned by Dana"),
    ("find_nodes", "nodes about Kafka in the graph"),
    ("approve_access_request", "approve all the access requests"),
]

EN_MULTI = [
    ("create_backup deploy_service", "take a backup of the orders db and then deploy api 2.5"),
    ("search_logs create_incident", "search the logs for payment errors and open an incident"),
    ("list_environments create_environment", "list the environments and create a new one"),
    ("query_metrics create_dashboard", "show checkout latency metrics and make a dashboard"),
    ("rollback_deployment create_incident", "roll back checkout and page the on-call"),
    ("rotate_secret deploy_service", "rotate the stripe key and redeploy payments"),
    ("get_schema migrate_schema", "show the users schema, then apply the migration"),
    ("invite_user request_access", "invite Maria and request access to billing for her"),
]

RU_PLAIN = [
    ("list_dashboards", "покажи все дашборды"),
    ("list_dashboards", "какие у нас есть дашборды?"),
    ("create_dashboard", "создай дашборд по задержке оформления заказа"),
    ("create_dashboard", "сделай новый дашборд с графиками CPU и памяти"),
    ("share_dashboard", "поделись дашбордом платежей с командой SRE"),
    ("share_dashboard", "дай Анне доступ на редактирование моего дашборда"),
    ("list_environments", "покажи список окружений"),
    ("list_environments", "в каком состоянии стенд staging?"),
    ("create_environment", "создай новое окружение для ветки feat-42"),
    ("create_environment", "подними стенд для демо"),
    ("delete_environment", "удали окружение pr-17"),
    ("delete_environment", "снеси стенд qa, он больше не нужен"),
    ("request_access", "мне нужен доступ к репозиторию биллинга"),
    ("request_access", "запроси для меня права на продовую базу"),
    ("approve_access_request", "одобри заявку Боба на доступ"),
    ("approve_access_request", "отклони заявки подрядчиков на доступ"),
    ("revoke_access", "отзови у Кэрол доступ к продакшену"),
    ("revoke_access", "забери у Ивана права на кластер аналитики"),
    ("list_backups", "покажи бэкапы базы заказов"),
    ("list_backups", "когда был последний бэкап?"),
    ("create_backup", "сделай бэкап базы пользователей сейчас"),
    ("create_backup", "сними резервную копию базы заказов"),
    ("restore_backup", "восстанови базу заказов из вчерашнего бэкапа"),
    ("restore_backup", "восстановить базу из резервной копии за понедельник"),
    ("delete_backup", "удали бэкап прошлого года"),
    ("delete_backup", "удалить старые резервные копии тестовой базы"),
    ("get_schema", "покажи схему таблицы заказов"),
    ("get_schema", "какие колонки в таблице пользователей?"),
    ("migrate_schema", "примени миграцию схемы на стейджинге"),
    ("migrate_schema", "прогони миграции на базе биллинга"),
    ("deploy_service", "задеплой api версии 2.4.1 в прод"),
    ("deploy_service", "выкати сервис checkout на стейджинг"),
    ("rollback_deployment", "откати последний деплой api"),
    ("rollback_deployment", "верни checkout на предыдущую версию, сделай откат"),
    ("get_deployment_status", "какой статус у деплоя api?"),
    ("get_deployment_status", "покажи историю релизов сервиса поиска"),
    ("search_logs", "поищи в логах ошибки таймаута за последний час"),
    ("search_logs", "найди 500-е ошибки в логах шлюза"),
    ("query_metrics", "какая задержка p99 у checkout сегодня?"),
    ("query_metrics", "покажи нагрузку CPU на api за сутки"),
    ("create_incident", "заведи инцидент: не проходят платежи"),
    ("create_incident", "вызови дежурного, сайт лежит"),
    ("toggle_feature_flag", "включи фича-флаг new-checkout на стейджинге"),
    ("toggle_feature_flag", "выключи флаг dark-mode в проде"),
    ("invite_user", "пригласи maria@example.com в пространство с ролью наблюдателя"),
    ("invite_user", "добавь нового коллегу с ролью редактора"),
    ("rotate_secret", "смени ключ API для stripe"),
    ("rotate_secret", "поменяй пароль базы для сервиса отчётов"),
    ("find_nodes", "найди в графе узлы с меткой Person"),
    ("find_nodes", "поиск по графу: всё про Kafka"),
    ("get_graph", "покажи весь граф знаний"),
    ("get_graph", "выведи граф со всеми узлами и связями"),
    ("add_node", "добавь узел для новой команды Atlas"),
    ("add_node", "создай новый узел Payments API"),
    ("connect", "свяжи Алису с командой Atlas связью member_of"),
    ("connect", "соедини узел Payments API с узлом Postgres"),
    ("set_property", "установи свойство owner у Payments API в Боба"),
    ("set_property", "поменяй атрибут tier на gold у узла Kafka"),
    ("delete_node", "удали узел Old Service"),
    ("delete_node", "удалить узел Legacy Billing из графа"),
    ("list_capabilities", "что ты умеешь?"),
    ("list_capabilities", "какие у тебя возможности?"),
]

RU_SYNONYM = [
    ("list_dashboards", "какие панели мониторинга существуют?"),
    ("deploy_service", "раскатай новую сборку api на прод"),
    ("rollback_deployment", "верни как было до вчерашнего релиза"),
    ("create_incident", "у нас авария, поднимай тревогу"),
    ("query_metrics", "сколько памяти ест api?"),
    ("search_logs", "что пишет воркер про connection refused?"),
    ("list_backups", "есть ли копии базы за прошлую неделю?"),
    ("rotate_secret", "токен утёк, выпусти новый"),
    ("invite_user", "позови коллегу в рабочее пространство"),
    ("get_deployment_status", "докатился ли последний релиз поиска?"),
    ("get_schema", "опиши структуру таблицы платежей"),
    ("request_access", "как мне попасть в админку?"),
    ("toggle_feature_flag", "отключи бета-фичу для всех"),
    ("find_nodes", "найди сущности, связанные с Kafka"),
]

RU_TYPO = [
    ("list_dashboards", "покажи дашбрды"),
    ("deploy_service", "задиплой api на стейджинг"),
    ("list_environments", "покажи окруженя"),
    ("list_backups", "покажи бекапы"),
    ("restore_backup", "востанови базу из бэкапа"),
    ("create_incident", "заведи инцидет по платежам"),
    ("migrate_schema", "примени миграцыю на прод"),
    ("search_logs", "поищи в лгах ошибки"),
    ("rotate_secret", "смени сикрет для stripe"),
    ("query_metrics", "покажи метирки задержки"),
]

RU_INFLECTION = [
    ("list_backups", "нет ли свежих бэкапов?"),
    ("list_backups", "о резервных копиях за март"),
    ("list_environments", "сколько у нас окружений?"),
    ("list_environments", "что со стендами?"),
    ("list_dashboards", "в дашбордах пусто?"),
    ("get_deployment_status", "по деплоям api что нового?"),
    ("search_logs", "в логах сервиса поиска что-то есть?"),
    ("query_metrics", "по метрикам задержки что видно?"),
    ("create_incident", "по инцидентам сегодня что-то заводили? заведи новый"),
    ("rotate_secret", "с паролями сервиса отчётов надо разобраться, смени их"),
    ("get_schema", "покажи структуру таблиц заказов"),
    ("find_nodes", "найди в графе узлов про Kafka"),
]

RU_NEGATION = [
    ("delete_backup", "не удаляй бэкап"),
    ("delete_backup", "не надо удалять резервные копии, просто покажи их"),
    ("restore_backup", "не восстанавливай пока бэкап"),
    ("deploy_service", "не деплой api сегодня"),
    ("deploy_service", "отмена деплоя checkout"),
    ("delete_environment", "никогда не удаляй продовое окружение"),
    ("rollback_deployment", "не откатывай релиз"),
    ("revoke_access", "не отзывай доступ у Боба"),
    ("delete_node", "не удаляй узел Payments API"),
    ("toggle_feature_flag", "не выключай флаг checkout"),
    ("rotate_secret", "отмени смену секрета"),
    ("migrate_schema", "не запускай миграцию на проде"),
    ("create_incident", "не надо заводить инцидент"),
    ("invite_user", "не приглашай подрядчика пока"),
    ("list_capabilities", "стоп"),
    ("list_capabilities", "отмена"),
]

RU_TRAP = [
    ("list_environments", "какая среда у стейджинга?"),
    ("get_schema", "покажи схемы таблиц"),
    ("query_metrics", "метрики api, пожалуйста"),
    ("search_logs", "логи сервиса логина"),
    ("list_dashboards", "дашборды Даны"),
    ("find_nodes", "узлы про Kafka в графе"),
    ("approve_access_request", "одобри все заявки на доступ"),
    ("list_backups", "какие бэкапы у базы бэкэнда?"),
]

RU_MULTI = [
    ("create_backup deploy_service", "сделай бэкап базы заказов и потом задеплой api 2.5"),
    ("search_logs create_incident", "поищи в логах ошибки платежей и заведи инцидент"),
    ("list_environments create_environment", "покажи окружения и создай новое"),
    ("query_metrics create_dashboard", "покажи метрики задержки и сделай дашборд"),
    ("rollback_deployment create_incident", "откати checkout и вызови дежурного"),
    ("rotate_secret deploy_service", "смени ключ stripe и передеплой платежи"),
    ("get_schema migrate_schema", "покажи схему users, потом примени миграцию"),
    ("invite_user request_access", "пригласи Марию и запроси ей доступ к биллингу"),
]

EN_MORE = [
    ("list_dashboards", "is there a dashboard for the search cluster?"),
    ("create_dashboard", "build me a board with error rate and traffic"),
    ("list_environments", "which envs are running right now?"),
    ("create_environment", "I need a fresh staging-like environment"),
    ("request_access", "can I get read access to the logs bucket?"),
    ("approve_access_request", "any access requests waiting for me? approve Tim's"),
    ("list_backups", "how big are the nightly backups?"),
    ("create_backup", "back up the inventory database before the migration"),
    ("restore_backup", "bring the users table back from the last snapshot"),
    ("get_schema", "which indexes exist on the orders table?"),
    ("migrate_schema", "migrate the analytics db to the latest schema"),
    ("deploy_service", "roll out the worker service to production"),
    ("get_deployment_status", "is the search deploy still running?"),
    ("search_logs", "any exceptions logged by the auth service since 9am?"),
    ("query_metrics", "error rate of the gateway over the last 7 days"),
    ("create_incident", "declare an incident for the login outage"),
    ("toggle_feature_flag", "enable the fast-search flag for beta users"),
    ("invite_user", "send an invite to the new designer"),
    ("rotate_secret", "the github token expires, rotate it"),
    ("connect", "add a depends_on edge from Checkout to Payments"),
    ("get_graph", "give me the knowledge graph"),
    ("set_property", "mark the Kafka node with property team=platform"),
    ("find_nodes", "which nodes mention billing?"),
    ("revoke_access", "cut off the intern's access to prod"),
    ("share_dashboard", "let the finance team see the revenue dashboard"),
]

RU_MORE = [
    ("list_dashboards", "есть ли дашборд по кластеру поиска?"),
    ("create_dashboard", "собери мне дашборд с долей ошибок и трафиком"),
    ("list_environments", "какие стенды сейчас запущены?"),
    ("create_environment", "нужно свежее окружение, как staging"),
    ("request_access", "можно мне доступ на чтение к бакету логов?"),
    ("approve_access_request", "есть заявки на доступ? одобри заявку Тима"),
    ("list_backups", "сколько весят ночные бэкапы?"),
    ("create_backup", "забэкапь базу склада перед миграцией"),
    ("restore_backup", "верни таблицу users из последней резервной копии"),
    ("get_schema", "какие индексы есть на таблице заказов?"),
    ("migrate_schema", "мигрируй базу аналитики на последнюю схему"),
    ("deploy_service", "выкати воркер в продакшен"),
    ("get_deployment_status", "деплой поиска ещё идёт?"),
    ("search_logs", "были ли исключения в логах auth с 9 утра?"),
    ("query_metrics", "доля ошибок шлюза за последние 7 дней"),
    ("create_incident", "объяви инцидент по падению логина"),
    ("toggle_feature_flag", "включи флаг fast-search для бета-пользователей"),
    ("invite_user", "отправь приглашение новому дизайнеру"),
    ("rotate_secret", "токен github истекает, ротируй его"),
    ("connect", "добавь связь depends_on от Checkout к Payments"),
    ("get_graph", "дай мне граф знаний"),
    ("set_property", "пометь узел Kafka свойством team=platform"),
    ("find_nodes", "какие узлы упоминают биллинг?"),
    ("revoke_access", "отключи стажёру доступ к проду"),
    ("share_dashboard", "открой команде финансов дашборд выручки"),
]

# Added with the router's generalisation work, written before being run against it: the
# thin kinds (traps, multi-intent, typos) and English verb forms and plurals.
EN_INFLECTION = [
    ("deploy_service", "deploying api 2.6 to staging now"),
    ("rollback_deployment", "we are rolling back the checkout release"),
    ("restore_backup", "restoring the orders db from the nightly backup"),
    ("revoke_access", "Bob left, get his access revoked"),
    ("invite_user", "Anna should be invited as an editor"),
    ("rotate_secret", "the stripe key needs rotating"),
    ("migrate_schema", "migrated the schema yet? apply it to staging"),
    ("create_backup", "back up the billing database before the release"),
    ("toggle_feature_flag", "flags for dark mode should be switched off"),
    ("search_logs", "searching logs for OOM kills"),
    ("create_incident", "paging on-call: checkout outage"),
    ("share_dashboard", "sharing the latency dashboard with the SRE team"),
    ("list_environments", "environments currently running?"),
    ("query_metrics", "latencies of the api over the last day"),
    ("get_schema", "columns and indexes of the users table"),
    ("delete_environment", "preview envs should be deleted after merging"),
]

EN_TRAP_MORE = [
    ("search_logs", "search the catalog service logs for errors"),
    ("query_metrics", "show the metrics of the flagship service"),
    ("list_backups", "list backups of the backend database"),
    ("get_deployment_status", "status of the deployment of the envoy proxy"),
    ("query_metrics", "memory usage of the userservice pods"),
    ("get_schema", "show the schema of the tablespace config"),
    ("find_nodes", "find nodes about nodejs in the graph"),
    ("create_incident", "open an incident: the pagination API is down"),
]

EN_MULTI_MORE = [
    ("list_backups restore_backup", "which backups do we have for orders? restore the latest"),
    ("toggle_feature_flag deploy_service", "turn off the beta flag and deploy checkout 3.1"),
    ("revoke_access invite_user", "revoke Tom's access and invite his replacement Kim"),
    ("get_deployment_status search_logs", "is the api deployment done? check its logs"),
    ("create_environment deploy_service", "create a preview environment and deploy feat-9 to it"),
    ("query_metrics create_incident", "db cpu is at 100%, check the metrics and open an incident"),
    ("delete_backup create_backup", "delete last year's backups and take a fresh one"),
    ("create_dashboard share_dashboard", "make a dashboard for queue depth and share it with ops"),
]

EN_TYPO_MORE = [
    ("share_dashboard", "shrae the dashboard with Tim"),
    ("invite_user", "invte Maria to the workspace"),
    ("toggle_feature_flag", "toggel the beta flag"),
    ("delete_environment", "delte the preview enviroment"),
]

RU_TRAP_MORE = [
    ("search_logs", "поищи в логах ошибки сервиса логистики"),
    ("list_environments", "какие окружения есть для средства сборки?"),
    ("get_schema", "покажи таблицы базы табеля"),
    ("list_backups", "покажи бэкапы базы бэкофиса"),
    ("rotate_secret", "смени токен сервиса токенизации"),
    ("get_deployment_status", "статус деплоя сервиса env-proxy"),
    ("query_metrics", "метрики сервиса метеоданных"),
    ("toggle_feature_flag", "выключи флаг beta на флагманском сервисе"),
]

RU_MULTI_MORE = [
    ("list_backups restore_backup", "какие бэкапы есть у базы заказов? восстанови последний"),
    ("toggle_feature_flag deploy_service", "выключи бета-флаг и выкати checkout 3.1"),
    ("revoke_access invite_user", "забери доступ у Тома и пригласи Ким на его место"),
    ("get_deployment_status search_logs", "деплой api закончился? посмотри логи на ошибки"),
    ("create_environment deploy_service", "создай превью-стенд и задеплой туда ветку feat-9"),
    ("query_metrics create_incident", "CPU базы на 100%, глянь метрики и заведи инцидент"),
    ("delete_backup create_backup", "удали прошлогодние бэкапы и сделай свежий"),
    ("create_dashboard share_dashboard", "сделай дашборд по глубине очереди и поделись им с ops"),
]

RU_TYPO_MORE = [
    ("share_dashboard", "поделис дашбордом с Тимом"),
    ("invite_user", "приглоси Марию в пространство"),
    ("toggle_feature_flag", "выключи фичафлаг beta"),
    ("delete_environment", "удоли превью-окружение"),
]

RU_INFLECTION_MORE = [
    ("deploy_service", "выкатываем api 2.6 на стейджинг"),
    ("rollback_deployment", "откатывайте релиз checkout"),
    ("restore_backup", "восстанавливаем базу заказов из ночного бэкапа"),
    ("revoke_access", "доступы Боба ещё не отозваны? отзови"),
]

# Paraphrases naming no keyword, written to probe generalisation and run once before being
# kept. The fallback's top-k (8, was 5) was chosen after seeing them: with 5 it found 70%;
# and the example catalogue's `ALSO` passages were written after them.
EN_PARAPHRASE = [
    ("search_logs", "what did the auth service print around 3am?"),
    ("search_logs", "any stack traces from the worker today?"),
    ("query_metrics", "how many requests per second is the gateway handling?"),
    ("query_metrics", "is the database CPU spiking?"),
    ("create_incident", "everything is on fire, wake up whoever is on duty"),
    ("create_incident", "customers can't pay, raise a sev1"),
    ("request_access", "I can't open the finance repo, can you get me in?"),
    ("request_access", "let me into the prod cluster"),
    ("revoke_access", "Kate left the company, cut her off from everything"),
    ("approve_access_request", "Tim is waiting for my OK to reach billing, let him in"),
    ("rotate_secret", "the stripe credentials leaked, replace them"),
    ("invite_user", "onboard our new designer into the workspace"),
    ("toggle_feature_flag", "hide the new checkout from users for now"),
    ("deploy_service", "push the latest build of search to prod"),
    ("rollback_deployment", "the last release broke login, go back to the old one"),
    ("get_deployment_status", "did yesterday's rollout of billing finish?"),
    ("list_environments", "which sandboxes are up right now?"),
    ("create_environment", "I need an isolated copy of staging for my branch"),
    ("delete_environment", "get rid of the sandbox for pr-88"),
    ("create_backup", "save a copy of the orders data before I touch it"),
    ("restore_backup", "bring the users db back to how it was on Monday"),
    ("list_backups", "do we have copies of the billing db from last week?"),
    ("get_schema", "what fields does the invoices table have?"),
    ("migrate_schema", "add the new column to prod via the migration"),
    ("create_dashboard", "I want a screen with charts of queue depth"),
    ("share_dashboard", "let the finance folks see my revenue board"),
    ("list_dashboards", "what monitoring boards exist?"),
]

RU_PARAPHRASE = [
    ("search_logs", "что сервис авторизации писал около трёх ночи?"),
    ("search_logs", "есть стектрейсы от воркера за сегодня?"),
    ("query_metrics", "сколько запросов в секунду держит шлюз?"),
    ("query_metrics", "у базы скачет процессор?"),
    ("create_incident", "всё горит, разбуди того, кто на смене"),
    ("create_incident", "клиенты не могут оплатить, поднимай sev1"),
    ("request_access", "не могу открыть репо финансов, пусти меня"),
    ("revoke_access", "Катя уволилась, отключи её отовсюду"),
    ("approve_access_request", "Тим ждёт моего ок на биллинг, пусти его"),
    ("rotate_secret", "креды stripe утекли, замени их"),
    ("invite_user", "добавь нового дизайнера в рабочее пространство"),
    ("toggle_feature_flag", "спрячь пока новый чекаут от пользователей"),
    ("deploy_service", "залей свежую сборку поиска на прод"),
    ("rollback_deployment", "последний релиз сломал логин, верни старую версию"),
    ("get_deployment_status", "вчерашняя раскатка биллинга закончилась?"),
    ("list_environments", "какие песочницы сейчас подняты?"),
    ("create_environment", "нужна изолированная копия стейджинга под мою ветку"),
    ("delete_environment", "снеси песочницу для pr-88"),
    ("create_backup", "сохрани копию данных заказов, прежде чем я их трону"),
    ("restore_backup", "верни базу пользователей в состояние на понедельник"),
    ("list_backups", "есть копии базы биллинга за прошлую неделю?"),
    ("get_schema", "какие поля у таблицы счетов?"),
    ("migrate_schema", "добавь новую колонку на прод через миграцию"),
    ("create_dashboard", "хочу экран с графиками глубины очереди"),
    ("share_dashboard", "открой финансистам мою доску выручки"),
    ("list_dashboards", "какие есть доски мониторинга?"),
]

# Paraphrases written after the catalogue's `ALSO` passages, before being run once: the
# router had not seen them (found 60% before those passages, 84% with them).
EN_UNSEEN = [
    ("search_logs", "did nginx say anything weird after midnight?"),
    ("query_metrics", "what's the average response time of search this hour?"),
    ("create_incident", "login is broken for all customers, sound the alarm"),
    ("request_access", "I'm blocked from the marketing repo, sort out my rights"),
    ("revoke_access", "remove the intern from the production cluster"),
    ("approve_access_request", "greenlight Ben's request for the data warehouse"),
    ("rotate_secret", "the slack webhook secret is compromised"),
    ("invite_user", "our new QA engineer needs an account in the workspace"),
    ("toggle_feature_flag", "show the new pricing page only to beta testers"),
    ("deploy_service", "get build 812 of the notifier onto staging"),
    ("rollback_deployment", "payments 4.2 is buggy, return to 4.1"),
    ("create_environment", "I want my own copy of the stack to try things"),
    ("restore_backup", "someone dropped rows in orders, recover them from last night"),
    ("list_backups", "when did we last dump the analytics database?"),
    ("share_dashboard", "give the support team a view of the sla board"),
]

RU_UNSEEN = [
    ("search_logs", "nginx ругался на что-нибудь после полуночи?"),
    ("query_metrics", "какое среднее время ответа поиска за этот час?"),
    ("create_incident", "логин сломан у всех клиентов, бей тревогу"),
    ("request_access", "меня не пускает в репо маркетинга, разберись с правами"),
    ("revoke_access", "убери стажёра из продового кластера"),
    ("rotate_secret", "секрет вебхука slack скомпрометирован"),
    ("toggle_feature_flag", "покажи новую страницу цен только бета-тестерам"),
    ("deploy_service", "закинь сборку 812 нотификатора на стейджинг"),
    ("rollback_deployment", "платежи 4.2 глючат, верни 4.1"),
    ("restore_backup", "кто-то удалил строки в заказах, подними их из ночной копии"),
]

CASES: list[Case] = [
    *_cases("en", "plain", EN_MORE),
    *_cases("ru", "plain", RU_MORE),
    *_cases("en", "plain", EN_PLAIN),
    *_cases("en", "synonym", EN_SYNONYM),
    *_cases("en", "typo", EN_TYPO),
    *_cases("en", "negation", EN_NEGATION),
    *_cases("en", "trap", EN_TRAP),
    *_cases("en", "multi", EN_MULTI),
    *_cases("ru", "plain", RU_PLAIN),
    *_cases("ru", "synonym", RU_SYNONYM),
    *_cases("ru", "typo", RU_TYPO),
    *_cases("ru", "inflection", RU_INFLECTION),
    *_cases("ru", "negation", RU_NEGATION),
    *_cases("ru", "trap", RU_TRAP),
    *_cases("ru", "multi", RU_MULTI),
    *_cases("en", "inflection", EN_INFLECTION),
    *_cases("en", "trap", EN_TRAP_MORE),
    *_cases("en", "multi", EN_MULTI_MORE),
    *_cases("en", "typo", EN_TYPO_MORE),
    *_cases("ru", "trap", RU_TRAP_MORE),
    *_cases("ru", "multi", RU_MULTI_MORE),
    *_cases("ru", "typo", RU_TYPO_MORE),
    *_cases("ru", "inflection", RU_INFLECTION_MORE),
    *_cases("en", "synonym", EN_PARAPHRASE),
    *_cases("ru", "synonym", RU_PARAPHRASE),
    *_cases("en", "unseen", EN_UNSEEN),
    *_cases("ru", "unseen", RU_UNSEEN),
]
