#!/bin/sh
# Install what tests/e2e/agui/ drives: AG-UI's reference client (@ag-ui/client, pinned by
# package-lock.json) into ./node_modules. The tests run this when node_modules is missing;
# CI may run it ahead of pytest to cache the install.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
