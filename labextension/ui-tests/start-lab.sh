#!/usr/bin/env bash
# Start the JupyterLab the Galata tests drive: TRAINHUB_HOME and the server root are fresh
# temporary directories (the root holds a copy of examples/), no GPU is used.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=${TRAINHUB_VENV:-${TRAINHUB_CACHE:-$HOME/.cache/trainhub}/venv/py3.11}
work=$(mktemp -d -t trainhub-ui-XXXXXX)
mkdir -p "$work/home" "$work/root"
cp -r "$root/examples" "$work/root/examples"
export TRAINHUB_HOME="$work/home" TRAINHUB_UI_ROOT="$work/root" TRAINHUB_GPUS=0
export TRAINHUB_BACKEND=local PATH="$venv/bin:$PATH"
echo "trainhub ui-tests: home $TRAINHUB_HOME, root $TRAINHUB_UI_ROOT" >&2
exec jupyter lab --config "$here/jupyter_server_test_config.py"
