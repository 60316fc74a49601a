#!/usr/bin/env bash
# UI tests: jest for the extension's logic, then Galata/Playwright against a real
# `jupyter lab` in Debian's Chromium (screenshots land in docs/). Builds what is missing.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup-ui.sh" | tail -n 1)
export PATH="$venv/bin:$PATH" TRAINHUB_VENV="$venv"

cd "$root"
jlpm test
cd "$root/labextension/ui-tests"
CI=1 jlpm playwright test "$@"
