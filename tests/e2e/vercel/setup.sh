#!/bin/sh
# Install what tests/e2e/vercel/ drives: the Vercel AI SDK's client of each major we serve
# (`ai5`, `ai6`, `ai7` are npm aliases of ai@5, ai@6 and ai@7, pinned by package-lock.json)
# into ./node_modules. The tests run this when node_modules is missing; CI may run it ahead
# of pytest to cache the install.
set -eu
cd "$(dirname "$0")"
exec npm ci --no-audit --no-fund
