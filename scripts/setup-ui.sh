#!/usr/bin/env bash
# Everything the UI tests need, idempotently: the trainhub JupyterLab extension built (or reused)
# and installed into the Python environment, the node packages of jest and of the Playwright
# tests, and Debian's Chromium when it is missing.
# Prints the path of the virtual environment on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[setup-ui] %s\n' "$*" >&2; }

venv=${TRAINHUB_VENV:-}
if [ -z "$venv" ]; then
  venv=$(bash "$root/scripts/setup-env.sh" | tail -n 1)
fi

if [ "${TRAINHUB_SKIP_CHROMIUM:-0}" != 1 ] && ! command -v chromium >/dev/null; then
  log "installing Debian's chromium"
  bash "$root/scripts/debian-install.sh" chromium
fi

packages=(.)
if [ "${TRAINHUB_UI_TESTS:-1}" = 1 ]; then
  packages+=(labextension/ui-tests)
fi
TRAINHUB_VENV="$venv" bash "$root/scripts/setup-labextension.sh" "${packages[@]}" >/dev/null
echo "$venv"
