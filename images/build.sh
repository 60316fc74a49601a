#!/usr/bin/env bash
# Builds (or reuses) the curated images: installs Debian's buildah and mmdebstrap when missing,
# then runs images/build.py, which prints the path of the image index on its last line.
# Arguments and TRAINHUB_IMAGES name the images (default: base pytorch-cpu); see images/README.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if ((${#need[@]})); then
  printf '[images] installing Debian packages: %s\n' "${need[*]}" >&2
  bash "$root/scripts/debian-install.sh" --no-install-recommends "${need[@]}"
fi

exec "${PYTHON:-python}" "$root/images/build.py" "$@"
