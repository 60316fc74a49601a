#!/usr/bin/env bash
# The whole test suite, from a fresh machine or a warm one: installs what it needs, builds
# (or reuses) the cached control-plane binaries, the UI and its browser, then runs every tier.
# With arguments, they go to one pytest run instead (bash scripts/test.sh tests/local -k resume).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The run leaves the work tree as it found it (screenshots and the like go to the run's own
# folders): what git sees is compared at the end, and any change fails the run, named.
tree_before=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
tree_unchanged() {
  local after
  after=$(git status --porcelain --untracked-files=all 2>/dev/null || true)
  [[ $after == "$tree_before" ]] && return 0
  echo "=============== the test run changed the work tree ===============" >&2
  diff <(printf '%s\n' "$tree_before") <(printf '%s\n' "$after") >&2 || true
  return 1
}

venv=$(bash scripts/setup-env.sh | tail -n 1)
export PATH="$venv/bin:$PATH" TRAINHUB_VENV="$venv"
# The images the tests run: the curated ones, and the hub and proxy that
# tests/hub/test_z2jh_install.py installs with Zero-to-JupyterHub's chart.
export TRAINHUB_IMAGES=${TRAINHUB_IMAGES:-base pytorch-cpu hub proxy}
# Each tier's log and pytest directory, and the images' build log.
runs=${TMPDIR:-/tmp}/trainhub-tests
# A run cut short can leave the real node's mounts below it: unmounted first, or the directory
# cannot be cleared.
if [[ -d $runs ]]; then
  findmnt -rn -o TARGET | grep "^$runs/" | sort -r | xargs -r -n1 umount -l || true
fi
rm -rf "$runs" && mkdir -p "$runs"
declare -A tier_pid=() tier_start=()
images_pid=
# An interrupted run takes its tiers and the image build down with it (clusters and jobs die
# with their pytest; buildah with its build's process group).
stop_all() {
  kill "${tier_pid[@]}" 2>/dev/null || true
  [[ -z $images_pid ]] || kill -- "-$images_pid" 2>/dev/null || true
  [[ -z ${cpu_groups:-} ]] || rmdir "$cpu_groups"/* "$cpu_groups" 2>/dev/null || true
}
trap stop_all EXIT

# The lab extension, Chromium and Playwright: the browser tests of the hub need them too, and
# the images' trainhub wheel holds the extension.
bash scripts/setup-ui.sh >/dev/null
# The curated images build beside the control plane: on a fresh machine the Go build is bound
# by CPU for about 20 minutes, the images mostly by network and disk. Whoever needs them next
# (the real-node tier, tests/images) waits on the build's lock, or finds them built.
setsid bash images/build.sh >"$runs/images.log" 2>&1 &
images_pid=$!
bash tests/k8s/cluster/build.sh >&2
bash scripts/setup-hub.sh >&2

status=0
setup_took=$SECONDS
# Style is checked, not hoped for: ruff format --check and ruff check (line length included).
bash scripts/lint.sh || status=$?
lint_took=$((SECONDS - setup_took))
pytest=(python -m pytest -p no:cacheprovider -q -ra --durations=15)
if (($#)); then
  bash images/build.sh >/dev/null || status=$?
  "${pytest[@]}" "$@" || status=$?
  tree_unchanged || status=1
  exit "$status"
fi

# Each tier runs in a cgroup of its own where this machine lets us make one (root; cgroup v1's
# cpuacct or v2): the CPU it spent, daemons and detached processes included, is reported beside
# its time, each test's at the end of its log (tests/fixtures/cpu_report.py), and a process the
# tier left running is named.
cpu_groups=
for hierarchy in /sys/fs/cgroup/cpuacct /sys/fs/cgroup; do
  if [[ -w $hierarchy/cgroup.procs ]] && mkdir -p "$hierarchy/trainhub-tests-$$" 2>/dev/null; then
    cpu_groups=$hierarchy/trainhub-tests-$$
    break
  fi
done
declare -A tier_usage=()
# The tiers run side by side: most of their time is spent waiting on clusters, pods, torchrun
# and the browser, not computing. The real node is one per machine, so its tests (marked by
# tests/fixtures/k8s.py) are one tier.
tier() {
  local name=$1
  shift
  local group=$cpu_groups/$name usage=()
  if [[ -n $cpu_groups ]] && mkdir "$group"; then
    [[ -e $group/cpuacct.usage ]] && usage=("$group/cpuacct.usage") || usage=("$group/cpu.stat")
    # The real node's pods run under the kubelet's cgroup root (tests/k8s/cluster/node.py):
    # counted in each test's figure, gone with the node before the tier's total is read.
    [[ $name != node+start ]] || usage+=("${cpu_groups%/*}/trainhub-node-*/cpuacct.usage")
    tier_usage[$name]=$(IFS=:; echo "${usage[*]}")
  fi
  (
    [[ -z ${tier_usage[$name]:-} ]] || echo "$BASHPID" >"$group/cgroup.procs"
    export TRAINHUB_TEST_CPU_USAGE=${tier_usage[$name]:-}
    "$@"
  ) >"$runs/$name.log" 2>&1 &
  tier_pid[$name]=$!
  tier_start[$name]=$SECONDS
}
tier_cpu() {
  [[ -n ${tier_usage[$1]:-} ]] || return 0
  TRAINHUB_TEST_CPU_USAGE=${tier_usage[$1]} python -c \
    'import os; from tests.fixtures.cpu_report import ENV, usage_s; print(f"  cpu {sum(usage_s(os.environ[ENV].split(os.pathsep)).values()):5.0f} s", end="")'
}
# What a tier left running: named (a leak), then stopped, so that its cgroup can go.
tier_leftovers() {
  local group=$cpu_groups/$1 pid stat live=()
  [[ -n $cpu_groups && -d $group ]] || return 0
  # From /proc, not ps (procps may be absent). A zombie whose parent left is init's to reap,
  # not a leak (nor can it be killed).
  for pid in $(cat "$group/cgroup.procs"); do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    stat=${stat##*) }
    [[ ${stat%% *} == Z ]] || live+=("$pid")
  done
  ((${#live[@]})) || return 0
  echo "=============== tier $1 left these running ==============="
  for pid in "${live[@]}"; do
    echo "$pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  done
  kill -9 "${live[@]}" 2>/dev/null || true
}
# The tiers are sized to end together (on a warm 2-core machine each takes 28 to 32 minutes
# beside the others: `processes` spends the most CPU, `node+start` waits the most).
node_and_start() {
  # The newcomer's `make start` in a fresh environment, which needs no image, while the curated
  # images (images/README.md) build in the background after a change to trainhub; then the
  # images, built or found up to date, and the tests that run them on the node (tests/images
  # waits on the build's lock, or finds them built).
  local s=0
  "${pytest[@]}" --basetemp="$runs/start" tests/start || s=$?
  bash images/build.sh >/dev/null &&
    "${pytest[@]}" --basetemp="$runs/real-node" -m real_node tests/hub tests/k8s || s=$?
  return "$s"
}
clusters_then_ui() {
  local s=0
  "${pytest[@]}" --basetemp="$runs/clusters" -m "not real_node" tests/hub tests/k8s || s=$?
  bash scripts/test-ui.sh || s=$?
  return "$s"
}
processes() {
  "${pytest[@]}" --basetemp="$runs/processes" tests --ignore=tests/hub --ignore=tests/k8s \
    --ignore=tests/start
}
# Three at a time: on a 2-core machine more only trade waiting for CPU time, and tests that
# time a process's shutdown or a sampler's reach start to fail.
tier node+start node_and_start
tier clusters+ui clusters_then_ui
tier processes processes

summary=()
while ((${#tier_pid[@]})); do
  done_pid=
  tier_status=0
  wait -n -p done_pid "${tier_pid[@]}" || tier_status=$?
  for name in "${!tier_pid[@]}"; do
    [[ ${tier_pid[$name]} == "$done_pid" ]] || continue
    took=$((SECONDS - tier_start[$name]))
    echo "=============== tier $name: exit $tier_status after ${took} s ==============="
    cat "$runs/$name.log"
    tier_leftovers "$name"
    summary+=("$(printf '%-10s exit %d  %4d s' "$name" "$tier_status" "$took")$(tier_cpu "$name")")
    ((tier_status == 0)) || status=$tier_status
    unset "tier_pid[$name]"
  done
done
echo "=============== tiers (logs and pytest directories: $runs) ==============="
printf '%-10s %14s s\n' setup "$setup_took" lint "$lint_took"
printf '%s\n' "${summary[@]}"
tree_unchanged || status=1
exit "$status"
