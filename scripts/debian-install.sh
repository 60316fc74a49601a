#!/usr/bin/env bash
# apt-get install "$@", one at a time: the test command's setup steps run side by side
# (scripts/test.sh) and apt refuses to run twice at once. Package lists this machine fetched
# in the last hour (since boot) are reused, so steps that each install something do not each
# fetch them again.
# Usage: scripts/debian-install.sh [apt-get install options] PACKAGE...
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
exec 9>/run/lock/trainhub-debian-install
flock 9
fetched=/run/lock/trainhub-debian-lists
if [[ -z $(find "$fetched" -mmin -60 2>/dev/null) ]]; then
  apt-get -o DPkg::Lock::Timeout=900 update -qq >&2
  touch "$fetched"
fi
apt-get -o DPkg::Lock::Timeout=900 install -y -qq "$@" >&2
