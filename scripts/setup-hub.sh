#!/usr/bin/env bash
# Installs configurable-http-proxy (JupyterHub's proxy, an npm package) into a cache outside
# the clone, idempotently, for the hub end-to-end tests and the benchmark.
# Prints the directory holding the configurable-http-proxy executable on its last line.
set -euo pipefail

CHP_VERSION=5.3.0
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
prefix="$cache/chp/$CHP_VERSION"
bin="$prefix/node_modules/.bin"
log() { printf '[setup-hub] %s\n' "$*" >&2; }

if ! command -v npm >/dev/null; then
  log "installing Debian's nodejs and npm"
  bash "$(dirname "${BASH_SOURCE[0]}")/debian-install.sh" nodejs npm
fi

if [ ! -x "$bin/configurable-http-proxy" ]; then
  log "installing configurable-http-proxy@$CHP_VERSION into $prefix"
  mkdir -p "$prefix"
  npm install --silent --no-audit --no-fund --prefix "$prefix" "configurable-http-proxy@$CHP_VERSION" >&2
fi
"$bin/configurable-http-proxy" --version >/dev/null
echo "$bin"
