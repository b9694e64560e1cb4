#!/bin/sh
# Install what tests/e2e/browser/test_browser_eventsource.py drives: Debian's Chromium (apt,
# only when /usr/bin/chromium is absent; CI runs as root on Debian) and the pinned
# playwright-core (package-lock.json) into ./node_modules. playwright-core downloads no
# browser; never run `npx playwright install` here. The test runs this when either is
# missing; CI may run it ahead of pytest to cache the install.
set -eu
cd "$(dirname "$0")"
if [ ! -x /usr/bin/chromium ]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "setup.sh: /usr/bin/chromium is missing and apt-get is not available" >&2
        exit 3
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup.sh: /usr/bin/chromium is missing; installing it needs root (apt-get)" >&2
        exit 3
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq chromium
fi
exec npm ci --no-audit --no-fund
