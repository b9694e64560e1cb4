#!/bin/sh
# Install the pinned AIKit check dependencies (package-lock.json) into ./node_modules.
# tests/e2e/aikit/test_aikit_responses.py runs this when node_modules is absent; CI may run it
# ahead of pytest to cache the install. `.npmrc` keeps AIKit's UI peer dependencies out.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
