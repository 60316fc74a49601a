#!/usr/bin/env bash
# The whole test suite, from a fresh machine or a warm one: installs what it needs, builds
# (or reuses) the cached control-plane binaries, then runs every tier.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

venv=$(bash scripts/setup-env.sh | tail -n 1)
export PATH="$venv/bin:$PATH"

if [ -x tests/k8s/cluster/build.sh ] || [ -f tests/k8s/cluster/build.sh ]; then
  bash tests/k8s/cluster/build.sh >&2
fi

status=0
python -m pytest -p no:cacheprovider -q -ra --durations=15 tests "$@" || status=$?
# pytest's 5 means "no tests collected": a broken selection, not a pass.
exit "$status"
