#!/usr/bin/env bash
# Style is checked, not hoped for: ruff's formatter and linter over the Python code, with the
# line length of pyproject.toml enforced. Run by the test command; `make lint` runs it alone.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${TRAINHUB_VENV:-$(bash "$root/scripts/setup-env.sh" | tail -n 1)}
cd "$root"
"$venv/bin/ruff" format --check
"$venv/bin/ruff" check
