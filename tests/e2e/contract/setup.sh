#!/bin/sh
# Install what tests/e2e/contract/ drives: openapi-typescript (types from openapi/openapi.json)
# and typescript (tsc), pinned by package-lock.json, into ./node_modules. The test runs this
# when node_modules is missing; CI may run it ahead of pytest to cache the install.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
