#!/usr/bin/env bash
# Refresh the README's pictures (docs/*.png) on purpose: the UI tests and the hub walk-through,
# with their screenshots pointed at docs/ instead of the test run's own folder. Arguments go
# to Playwright (e.g. tests/compare.spec.ts to refresh one view's).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export TRAINHUB_SCREENSHOTS_DIR="$root/docs"
bash "$root/scripts/test-ui.sh" "$@"
if [ $# -eq 0 ]; then
  venv=$(bash "$root/scripts/setup-ui.sh" | tail -n 1)
  cd "$root"
  "$venv/bin/python" -m pytest -p no:cacheprovider -q tests/hub/test_researcher_path.py
fi
