#!/usr/bin/env bash
# Builds the trainhub JupyterLab extension, or reuses the build of the same sources, and installs
# it into the Python environment (TRAINHUB_VENV, else the one setup-env.sh prepares). Used by
# `make start` and by the UI tests' setup.
# Builds live in a cache outside the clone, keyed by what defines them: the extension's sources,
# style and schema, package.json, yarn.lock and tsconfig.json. A cached build is linked as is
# (seconds); without one the extension is built from nothing (jlpm clean, then build) and stored.
# node_modules are real directories in the clone (the builder and jest resolve from there), but
# each is installed once per lockfile: the install is kept outside the clone, keyed by package.json
# and yarn.lock, and a fresh clone gets a hard-linked copy of it (a second, not a 10-20 s link
# step). The downloaded packages live in a yarn cache outside it too.
# Arguments: package directories, relative to the clone, whose node packages must be installed
# even when a cached build is reused (`. labextension/ui-tests` for the UI tests); with
# --deps-only first, only those are installed and nothing is built (the lint step's ESLint and
# Prettier need no build).
# Prints the path of the virtual environment on its last line.
set -euo pipefail

deps_only=0
if [ "${1:-}" = --deps-only ]; then
  deps_only=1
  shift
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
builds="$cache/labextension"
installs="$cache/node_modules"
log() { printf '[labextension] %s\n' "$*" >&2; }

venv=${TRAINHUB_VENV:-}
if [ -z "$venv" ]; then
  venv=$(bash "$root/scripts/setup-env.sh" | tail -n 1)
fi
export PATH="$venv/bin:$PATH"
export YARN_CACHE_FOLDER="$cache/yarn" YARN_ENABLE_GLOBAL_CACHE=false
mkdir -p "$YARN_CACHE_FOLDER" "$builds" "$installs"

# $1: a directory with package.json + yarn.lock. Installs unless node_modules matches the lockfile.
install_deps() {
  local dir stamp key kept name
  dir=$(cd "$1" && pwd)
  name=${dir#"$root"}
  name=${name#/}
  name=${name//\//-}
  name=${name:-root}
  stamp="$dir/node_modules/.trainhub-lock-stamp"
  key=$(lock_key "$dir")
  [ "$(cat "$stamp" 2>/dev/null)" != "$key" ] || return 0
  kept="$installs/$name-$key"
  # A copy made of links to the kept install: never installed into, so the kept one stays intact.
  rm -rf "$dir/node_modules"
  if [ -f "$kept/.trainhub-lock-stamp" ]; then
    log "node packages of $name from $kept"
    touch "$kept"
    copy_tree "$kept" "$dir/node_modules"
    return 0
  fi
  log "jlpm install in ${name}"
  (cd "$dir" && jlpm install >&2)
  # The install may have updated the lockfile: key the stamp by what is there now.
  key=$(lock_key "$dir")
  echo "$key" >"$stamp"
  kept="$installs/$name-$key"
  if [ ! -d "$kept" ]; then
    local staging="$installs/.staging-$$"
    copy_tree "$dir/node_modules" "$staging"
    # Another run may have kept the same install meanwhile: keep the one already there.
    mv -T "$staging" "$kept" 2>/dev/null || rm -rf "$staging"
  fi
}

# Hard links where the cache and the clone share a file system, else a plain copy.
copy_tree() { cp -al "$1" "$2" 2>/dev/null || { rm -rf "$2" && cp -a "$1" "$2"; }; }

lock_key() { cat "$1/package.json" "$1/yarn.lock" 2>/dev/null | sha256sum | cut -c1-16; }

# Keeps the few entries of a cache directory used last.
prune() {
  find "$1" -mindepth 1 -maxdepth 1 -type d -not -name '.*' -printf '%T@ %p\n' |
    sort -rn | tail -n +"$(($2 + 1))" | cut -d' ' -f2- | xargs -r -d '\n' rm -rf
}

# The content of every input of the build (its tests are not one: tsconfig.json excludes them).
build_key() {
  (
    cd "$root"
    find labextension/src labextension/style labextension/schema -type f \
      -not -path 'labextension/src/__tests__/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum package.json yarn.lock tsconfig.json
  ) | sha256sum | cut -c1-16
}

for dir in "$@"; do install_deps "$root/$dir"; done
if [ "$deps_only" = 1 ]; then
  echo "$venv"
  exit 0
fi

built="$builds/$(build_key)"
if [ -f "$built/package.json" ]; then
  log "reusing the build of these sources: $built"
else
  install_deps "$root"
  built="$builds/$(build_key)" # the install may have updated yarn.lock
  log "building the extension from nothing into $built"
  (cd "$root" && jlpm clean >&2 && jlpm build >&2)
  staging=$(mktemp -d "$builds/.staging-XXXXXX")
  cp -a "$root/trainhub/labextension/." "$staging/"
  chmod 755 "$staging"
  # Another run may have stored the same build meanwhile: keep the one already there.
  mv -T "$staging" "$built" 2>/dev/null || rm -rf "$staging"
fi
touch "$built"
# Keep the few builds and installs used last; an environment linked to a pruned build is linked
# again here, and a clone's copy of a pruned install keeps its files (they are hard links).
prune "$builds" 5
prune "$installs" 4

# What `jupyter labextension develop` does, with the cached build: link it into the environment's
# labextensions directory, so `jupyter lab` from this venv serves it.
target="$venv/share/jupyter/labextensions/trainhub"
mkdir -p "$(dirname "$target")"
if [ "$(readlink "$target" 2>/dev/null)" != "$built" ]; then
  rm -rf "$target"
  ln -s "$built" "$target"
  log "linked $target -> $built"
fi
jupyter labextension list 2>&1 | grep -q 'trainhub.*enabled.*OK' ||
  { jupyter labextension list >&2; log "trainhub is not listed as an enabled extension"; exit 1; }
echo "$venv"
