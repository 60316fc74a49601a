#!/usr/bin/env bash
# Sets up trainhub (first run: downloads PyTorch, several GB, cached), builds the JupyterLab
# extension (or reuses the cached build of the same sources) and installs it, then opens
# JupyterLab on the local backend at the example notebook and says where to go and what to press.
# Arguments go to `jupyter lab` (e.g. --no-browser --port 8899).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=$(bash "$root/scripts/setup-env.sh" | tail -n 1)
TRAINHUB_VENV="$venv" bash "$root/scripts/setup-labextension.sh" >/dev/null
export PATH="$venv/bin:$PATH"
export TRAINHUB_BACKEND=local
cd "$root"
notebook=examples/train_ddp.ipynb

# `exec` below keeps this shell's pid for jupyter lab, and the server names its runtime file by
# its pid: once that file is there, the server is up and the file holds its URL and token.
info="$(jupyter --runtime-dir)/jpserver-$$.json"
rm -f "$info" # left behind by a server that had this pid and was killed
announce() {
  local url
  while kill -0 "$$" 2>/dev/null; do
    if url=$(python - "$info" "$notebook" 2>/dev/null <<'PY'
import json, sys, urllib.parse

with open(sys.argv[1]) as f:
    server = json.load(f)
query = "?" + urllib.parse.urlencode({"token": server["token"]}) if server["token"] else ""
print(f"{server['url']}lab/tree/{urllib.parse.quote(sys.argv[2])}{query}")
PY
    ); then
      printf '\ntrainhub is ready: open %s\n' "$url"
      printf 'then press "Submit as job" in the notebook toolbar, and follow the job in the Jobs panel on the left.\n\n'
      return
    fi
    sleep 0.5
  done
}
# Detached (a subshell that exits at once), so that jupyter lab has no child it did not start.
(announce &)

args=()
# Containers often run as root; the server refuses that unless told.
if [ "$(id -u)" = 0 ]; then args+=(--allow-root); fi
exec jupyter lab --ServerApp.root_dir="$root" "${args[@]}" "$@" "$notebook"
