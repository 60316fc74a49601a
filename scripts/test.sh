#!/usr/bin/env bash
# The whole test suite, from a fresh machine or a warm one: installs what it needs, builds
# (or reuses) the cached control-plane binaries, the UI and its browser, then runs every tier.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

venv=$(bash scripts/setup-env.sh | tail -n 1)
export PATH="$venv/bin:$PATH" TRAINHUB_VENV="$venv"

bash tests/k8s/cluster/build.sh >&2
bash scripts/setup-hub.sh >&2
# The lab extension, Chromium and Playwright: the browser tests of the hub need them too.
bash scripts/setup-ui.sh >/dev/null

status=0
# Style is checked, not hoped for: ruff format --check and ruff check (line length included).
bash scripts/lint.sh || status=$?
# The curated images (images/README.md), built or found up to date: tests/images runs them.
bash images/build.sh >/dev/null || status=$?
python -m pytest -p no:cacheprovider -q -ra --durations=20 tests "$@" || status=$?
# jest, then Galata in Chromium against a real JupyterLab.
bash scripts/test-ui.sh || status=$?
exit "$status"
