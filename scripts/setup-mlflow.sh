#!/usr/bin/env bash
# The MLflow tracking server the tests of the MLflow mirror start (trainhub/tracking): the `mlflow`
# package in a virtual environment of its own, never in trainhub's (trainhub speaks MLflow's REST
# API with the standard library; mlflow is no dependency of the product). Created once per pinned
# version under the cache, by uv (its wheels hard-linked from uv's cache), idempotently.
# Prints the path of the `mlflow` command on its last line.
set -euo pipefail

version=${TRAINHUB_MLFLOW_VERSION:-3.17.2}
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
venv="$cache/mlflow/$version"
uv_home="$cache/tools/uv-0.13.9"

mkdir -p "$cache/mlflow"
exec 9>"$cache/mlflow/.lock"
flock 9 # test tiers side by side on a fresh machine: one installs, the other waits
if [ ! -f "$venv/.installed" ]; then
  printf '[setup] installing mlflow %s into %s\n' "$version" "$venv" >&2
  rm -rf "$venv"
  if [ -x "$uv_home/bin/uv" ]; then
    export UV_CACHE_DIR="$cache/uv"
    "$uv_home/bin/uv" venv -q --python python3 "$venv" >&2
    "$uv_home/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python" "mlflow==$version" >&2
  else
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "mlflow==$version" >&2
  fi
  touch "$venv/.installed"
fi
echo "$venv/bin/mlflow"
