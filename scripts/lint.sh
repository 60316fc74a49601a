#!/usr/bin/env bash
# Style is checked, not hoped for: ruff's formatter and linter over the Python code, with the
# line length of pyproject.toml enforced, then ESLint (typescript-eslint's rules) and Prettier
# over the extension's TypeScript and the Playwright scripts. Run by the test command; `make lint`
# runs it alone (installing the node packages, once per lockfile, when they are missing).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${TRAINHUB_VENV:-$(bash "$root/scripts/setup-env.sh" | tail -n 1)}
cd "$root"
"$venv/bin/ruff" format --check
"$venv/bin/ruff" check
TRAINHUB_VENV="$venv" bash scripts/setup-labextension.sh --deps-only . >/dev/null
node_modules/.bin/eslint --max-warnings 0 .
node_modules/.bin/prettier --check --log-level warn labextension/src labextension/ui-tests \
  labextension/jest.config.js labextension/jest.setup.js \
  eslint.config.mjs
