#!/usr/bin/env bash
# UI tests: jest for the extension's logic, then Galata/Playwright against a real
# `jupyter lab` in Debian's Chromium (screenshots land in the run's test-results/; see
# scripts/refresh-screenshots.sh for docs/). Builds what is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup-ui.sh" | tail -n 1)
export PATH="$venv/bin:$PATH" TRAINHUB_VENV="$venv"

cd "$root"
jlpm test
cd "$root/labextension/ui-tests"
# As root, the browser and the lab get a network namespace of their own with loopback only, which
# is all they use: Chromium drops its requests in flight (net::ERR_NETWORK_CHANGED) whenever the
# host's interfaces change, as they do while the real node's tier starts and stops pods beside
# this one, and a lab that lost its extensions' code that way fails every test it runs.
isolated=()
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && unshare --net true 2>/dev/null; then
  isolated=(unshare --net -- sh -c 'ip link set lo up && exec "$@"' sh)
fi
CI=1 "${isolated[@]}" jlpm playwright test "$@"
