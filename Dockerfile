# syntax=docker/dockerfile:1
# chat-bff: multi-stage build; the runtime image has no compiler and runs as a non-root user.
#
#   docker build -t chat-bff .
#   docker run -p 8000:8000 -v chat-bff-data:/data -e JWT_SECRET=... chat-bff
#
# Settings are environment variables (`docker run -e`), those of the README and these:
#   PORT                 where uvicorn listens (default 8000); the health check follows it.
#   FORWARDED_ALLOW_IPS  the proxies whose X-Forwarded-For / X-Forwarded-Proto are believed
#                        (comma-separated addresses or networks). The default, 127.0.0.1,
#                        believes none outside the container. Set it to your load
#                        balancer's address; "*" only when nothing but the proxy can reach
#                        the container, or any client can claim any address.
#   DATABASE_URL         SQLite in the /data volume by default; Postgres in production.
#
# Stopping: `docker stop` sends SIGTERM, waits `-t` seconds (10 by default), then kills.
# uvicorn first waits up to GRACEFUL_SHUTDOWN_SECONDS for open responses to finish, then
# the app checkpoints running runs within SHUTDOWN_TIMEOUT_SECONDS: one after the other,
# 5 + 3 = 8 s at most, inside Docker's 10. To give either more time, raise the stop
# timeout with them: `docker stop -t 30`, compose `stop_grace_period`, Kubernetes
# `terminationGracePeriodSeconds`.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml setup.py constraints.txt README.md ./
COPY app ./app
COPY migrations ./migrations
# A wheel install: the migrations ride inside the package (app/migrations). Every version
# is the tested one, pinned by constraints.txt.
RUN python -m venv /opt/venv \
 && /opt/venv/bin/pip install --upgrade pip \
 && /opt/venv/bin/pip install -c constraints.txt .

FROM python:3.11-slim AS runtime
ARG PORT=8000
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONMALLOC=malloc \
    ENVIRONMENT=production \
    PORT=${PORT} \
    FORWARDED_ALLOW_IPS=127.0.0.1 \
    GRACEFUL_SHUTDOWN_SECONDS=5 \
    SHUTDOWN_TIMEOUT_SECONDS=3 \
    DATABASE_URL=sqlite+aiosqlite:////data/chat-bff.db
RUN groupadd --system app && useradd --system --gid app --home-dir /srv app \
 && mkdir -p /data /srv && chown app:app /data /srv
COPY --from=build /opt/venv /opt/venv
WORKDIR /srv
USER app
# The SQLite file of the default DATABASE_URL; mount a volume here to keep it.
VOLUME ["/data"]
EXPOSE ${PORT}
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:${PORT}/healthz', timeout=2).status == 200 else 1)"
# One worker per container; scale with replicas. `exec` makes uvicorn PID 1, so SIGTERM
# reaches it and becomes a lifespan shutdown, which checkpoints running runs. `--http`:
# uvicorn's httptools protocol with its waiting state made on first use (less memory per
# open connection: app/api/http_protocol.py).
CMD ["sh", "-c", "exec uvicorn app.main:app --http app.api.http_protocol:LeanHttpToolsProtocol --host 0.0.0.0 --port \"$PORT\" --proxy-headers --forwarded-allow-ips \"$FORWARDED_ALLOW_IPS\" --timeout-graceful-shutdown \"$GRACEFUL_SHUTDOWN_SECONDS\""]
