#!/usr/bin/env bash
# Builds the trainhub JupyterLab extension and installs it (development mode) into the
# Python environment, idempotently. Installs Debian's Chromium for the UI tests when missing.
# node_modules stay in the clone (the builder resolves from there); the downloaded packages
# live in a yarn cache outside it, and an install is skipped while the lockfile is unchanged.
# Prints the path of the virtual environment on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
log() { printf '[setup-ui] %s\n' "$*" >&2; }

venv=${TRAINHUB_VENV:-}
if [ -z "$venv" ]; then
  venv=$(bash "$root/scripts/setup-env.sh" | tail -n 1)
fi
export PATH="$venv/bin:$PATH"
export YARN_CACHE_FOLDER="$cache/yarn" YARN_ENABLE_GLOBAL_CACHE=false
mkdir -p "$YARN_CACHE_FOLDER"

if [ "${TRAINHUB_SKIP_CHROMIUM:-0}" != 1 ] && ! command -v chromium >/dev/null; then
  log "installing Debian's chromium"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 && apt-get install -y -qq chromium >&2
fi

# $1: a directory with package.json + yarn.lock. Installs unless node_modules matches the lockfile.
install_deps() {
  local dir=$1 stamp key
  stamp="$dir/node_modules/.trainhub-lock-stamp"
  key=$(cat "$dir/package.json" "$dir/yarn.lock" 2>/dev/null | sha256sum | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$key" ]; then
    log "jlpm install in ${dir#"$root"/}"
    (cd "$dir" && jlpm install >&2)
    # The install may have updated the lockfile: key the stamp by what is there now.
    key=$(cat "$dir/package.json" "$dir/yarn.lock" | sha256sum | cut -c1-16)
    echo "$key" >"$stamp"
  fi
}

install_deps "$root"
if [ "${TRAINHUB_UI_TESTS:-1}" = 1 ]; then
  install_deps "$root/labextension/ui-tests"
fi

log "building the extension"
(cd "$root" && jlpm build >&2)

# What `jupyter labextension develop` does: link the built extension into the environment's
# labextensions directory, so `jupyter lab` from this venv serves the working tree's build.
target="$venv/share/jupyter/labextensions/trainhub"
mkdir -p "$(dirname "$target")"
if [ "$(readlink "$target" 2>/dev/null)" != "$root/trainhub/labextension" ]; then
  rm -rf "$target"
  ln -s "$root/trainhub/labextension" "$target"
  log "linked $target -> $root/trainhub/labextension"
fi
jupyter labextension list 2>&1 | grep -q 'trainhub.*enabled.*OK' ||
  { jupyter labextension list >&2; log "trainhub is not listed as an enabled extension"; exit 1; }
echo "$venv"
