#!/usr/bin/env bash
# Set up trainhub (first run: downloads PyTorch, several GB, cached) and open JupyterLab with
# the trainhub extension on the local backend, at the example notebook.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup-env.sh" | tail -n 1)
export PATH="$venv/bin:$PATH"
export TRAINHUB_BACKEND=local
cd "$root"
exec jupyter lab --ServerApp.root_dir="$root" "${@}" examples/train_ddp.ipynb
