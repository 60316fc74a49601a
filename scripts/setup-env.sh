#!/usr/bin/env bash
# Sets up everything trainhub needs, idempotently, on a fresh Debian machine or a warm one.
# Heavy outputs (the Python environment, downloaded wheels) live in a cache outside the clone,
# keyed by what defines them, so repeated runs take seconds; deleting the cache rebuilds it all.
# Prints the path of the virtual environment on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
pyver=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
venv=${TRAINHUB_VENV:-$cache/venv/py$pyver}
extras=${TRAINHUB_EXTRAS:-dev}
mkdir -p "$cache/wheels" "$(dirname "$venv")"

log() { printf '[setup] %s\n' "$*" >&2; }

need_apt=()
command -v cc >/dev/null || need_apt+=(gcc libc6-dev)
command -v openssl >/dev/null || need_apt+=(openssl)
command -v git >/dev/null || need_apt+=(git)
for pkg in ${TRAINHUB_APT_EXTRA:-}; do need_apt+=("$pkg"); done
if ((${#need_apt[@]})); then
  log "installing Debian packages: ${need_apt[*]}"
  bash "$root/scripts/debian-install.sh" "${need_apt[@]}"
fi

if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >&2
fi

# uv puts the wheels into an environment as hard links to its cache: another environment with
# PyTorch and its CUDA libraries (several GB) takes seconds and writes almost nothing, where
# pip unpacks and writes all of it again. Its cache lives with ours.
uv_version=0.13.9
uv_home="$cache/tools/uv-$uv_version"
if [ ! -f "$uv_home/.installed" ]; then
  log "installing uv $uv_version into $uv_home"
  rm -rf "$uv_home"
  python3 -m venv "$uv_home"
  "$uv_home/bin/python" -m pip install -q "uv==$uv_version" >&2
  touch "$uv_home/.installed"
fi
export UV_CACHE_DIR="$cache/uv"
uv_install=("$uv_home/bin/uv" pip install -q --python "$venv/bin/python")

# Re-resolve only when the declared dependencies change. An environment that has them but whose
# editable install points at another checkout (-I: not the current directory) is pointed here
# without resolving (seconds, not a resolution and an isolated build against the package index).
stamp=$(cat "$root/pyproject.toml" "$root/scripts/constraints.txt" | sha256sum | cut -c1-16)-$extras
installed_from=$("$venv/bin/python" -I -c 'import trainhub, pathlib; print(pathlib.Path(trainhub.__file__).parent.parent)' 2>/dev/null || true)
# setup-ui.sh links the built lab extension there; an install would trip over a link into another
# checkout when it uninstalls the previous editable install. setup-ui.sh links it again.
link="$venv/share/jupyter/labextensions/trainhub"
if [ "$(cat "$venv/.trainhub-stamp" 2>/dev/null)" != "$stamp" ]; then
  log "installing trainhub[$extras] (editable) into $venv"
  if [ -L "$link" ]; then rm "$link"; fi
  # The PyTorch wheel and its CUDA runtime are several GB: keep them in our own wheelhouse
  # (the curated images are built from it too), downloaded once per pinned version.
  torch_pin=$(sed -n 's/^torch==//p' "$root/scripts/constraints.txt")
  if ! compgen -G "$cache/wheels/torch-$torch_pin-*.whl" >/dev/null; then
    "$venv/bin/python" -m pip download -q -d "$cache/wheels" -c "$root/scripts/constraints.txt" torch >&2
  fi
  # Byte-compiled as pip would: PYTHONDONTWRITEBYTECODE may forbid caching it at run time.
  SKIP_JUPYTER_BUILDER=1 "${uv_install[@]}" --compile-bytecode --find-links "$cache/wheels" \
    -c "$root/scripts/constraints.txt" -e "$root[$extras]" >&2
  echo "$stamp" >"$venv/.trainhub-stamp"
elif [ "$installed_from" != "$root" ]; then
  log "pointing the editable install of trainhub in $venv at $root"
  if [ -L "$link" ]; then rm "$link"; fi
  # The build backend is in the environment (the dev extra), or uv fetches it in isolation.
  isolation=()
  "$venv/bin/python" -c 'import hatchling, hatch_jupyter_builder, editables' 2>/dev/null && isolation=(--no-build-isolation)
  SKIP_JUPYTER_BUILDER=1 "${uv_install[@]}" --no-deps "${isolation[@]}" -e "$root" >&2
fi
# An editable install is not byte-compiled, and PYTHONDONTWRITEBYTECODE may forbid caching it
# at run time: then every rank would compile the runner again. Compile it as a wheel would.
"$venv/bin/python" -m compileall -q "$root/trainhub" "$root/server_extension" "$root/spawner" >/dev/null
# The MLflow tracking server the MLflow mirror's tests start lives in an environment of its own
# (mlflow is no dependency of trainhub); seconds when it is there already.
case ",$extras," in *,dev,*) bash "$root/scripts/setup-mlflow.sh" >/dev/null ;; esac
echo "$venv"
