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

# Each tier's log and pytest directory, and the builds' logs.
runs=${TMPDIR:-/tmp}/trainhub-tests
# A run cut short can leave the real node's mounts below it: unmounted first, or the directory
# cannot be cleared.
if [[ -d $runs ]]; then
  findmnt -rn -o TARGET | grep "^$runs/" | sort -r | xargs -r -n1 umount -l || true
fi
rm -rf "$runs" && mkdir -p "$runs"

# Disk, before anything is installed and once the last run's directory (15 GB) is gone: a cold
# run wrote 55 GB (the cache, 54 GB of it: the images' layers and archives 16 GB, the real
# node's image store, packages and builds), a warm one a few GB (a rebuilt image up to 16 GB).
# Short of that, the kubelet's eviction deletes the node's images mid-run and tests fail far
# from the cause: refuse now, saying so.
cache=${TRAINHUB_CACHE:-$HOME/.cache/trainhub}
mkdir -p "$cache"
need_gb=${TRAINHUB_MIN_FREE_GB:-$([[ -d $cache/images ]] && echo 20 || echo 55)}
free_gb=$(($(df --output=avail -k "$cache" | tail -n 1) / 1024 / 1024))
if ((free_gb < need_gb)); then
  echo "test.sh: $free_gb GB free where $cache lies; the run needs about $need_gb GB" \
    "(TRAINHUB_MIN_FREE_GB overrides this check)" >&2
  exit 2
fi

declare -A tier_pid=() tier_start=()
images_pid= k8s_pid=
# An interrupted run takes its tiers and the builds down with it (clusters and jobs die with
# their pytest; buildah and go with their build's process group).
stop_all() {
  kill "${tier_pid[@]}" 2>/dev/null || true
  [[ -z $images_pid ]] || kill -- "-$images_pid" 2>/dev/null || true
  [[ -z $k8s_pid ]] || kill -- "-$k8s_pid" 2>/dev/null || true
  [[ -n ${cpu_groups:-} ]] || return 0
  # A killed tier's subshell leaves its pytest running: every process of the tiers' cgroups is
  # stopped too (what pytest started dies with it), then the cgroups can go.
  local tries
  for tries in 1 2 3 4 5 6 7 8 9 10; do
    [[ -n $(cat "$cpu_groups"/*/cgroup.procs 2>/dev/null) ]] || break
    cat "$cpu_groups"/*/cgroup.procs 2>/dev/null | xargs -r kill 2>/dev/null || true
    sleep 1
  done
  rmdir "$cpu_groups"/* "$cpu_groups" 2>/dev/null || true
}
trap stop_all EXIT

# The control plane's binaries and the curated images build in the background, the Go build
# first: it needs nothing of the Python and UI setup, which is mostly network and disk, and on a
# fresh machine it is bound by CPU for 14 to 20 minutes. The tests wait for it before they
# start (a cold run's tests beside the build fail on time: Galata's waits, shutdown timings),
# so it runs at the tests' priority, not niced as a developer's build is. The images wait for
# the lab extension (their trainhub wheel holds it) and build beside the tests that need none:
# whoever needs them waits on their build's lock (images/build.sh), or finds them built.
# background NAME COMMAND...: its log is $runs/NAME.log, and when it ended is kept for the summary.
background() {
  local name=$1
  shift
  setsid bash -c '"${@:2}"; s=$?; date +%s >"$1"; exit $s' _ "$runs/$name.ended" "$@" \
    >"$runs/$name.log" 2>&1 &
}
background k8s-build env TRAINHUB_BUILD_NICE=0 bash tests/k8s/cluster/build.sh
k8s_pid=$!
k8s_built() {
  echo "[test.sh] waiting for the control plane's binaries ($runs/k8s-build.log)"
  bash tests/k8s/cluster/build.sh >/dev/null
}

venv=$(bash scripts/setup-env.sh | tail -n 1)
export PATH="$venv/bin:$PATH" TRAINHUB_VENV="$venv"
# The images the tests run: the curated ones, and the hub and proxy that
# tests/hub/test_z2jh_install.py installs with Zero-to-JupyterHub's chart.
export TRAINHUB_IMAGES=${TRAINHUB_IMAGES:-base pytorch-cpu hub proxy}
# The lab extension, Chromium and Playwright: the browser tests of the hub need them too, and
# the images' trainhub wheel holds the extension.
bash scripts/setup-ui.sh >/dev/null
background images bash images/build.sh
images_pid=$!
bash scripts/setup-hub.sh >&2

status=0
k8s_built >&2 || status=$?
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
  # images, built or found up to date, and the tests that run them on the node.
  local s=0
  "${pytest[@]}" --basetemp="$runs/start" tests/start || s=$?
  bash images/build.sh >/dev/null &&
    "${pytest[@]}" --basetemp="$runs/real-node" -m real_node tests/hub tests/k8s || s=$?
  return "$s"
}
ui_then_clusters() {
  local s=0
  bash scripts/test-ui.sh || s=$?
  "${pytest[@]}" --basetemp="$runs/clusters" -m "not real_node" tests/hub tests/k8s || s=$?
  return "$s"
}
processes() {
  local s=0
  "${pytest[@]}" --basetemp="$runs/processes" tests --ignore=tests/hub --ignore=tests/k8s \
    --ignore=tests/start --ignore=tests/images || s=$?
  # The images, pushed to a registry built with the control plane: built by now, or waited for.
  bash images/build.sh >/dev/null && "${pytest[@]}" --basetemp="$runs/images" tests/images || s=$?
  return "$s"
}
# Three at a time: on a 2-core machine more only trade waiting for CPU time, and tests that
# time a process's shutdown or a sampler's reach start to fail.
tier node+start node_and_start
tier ui+clusters ui_then_clusters
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
run_start=$(($(date +%s) - SECONDS))
for name in images k8s-build; do # the background builds: when each ended, from the run's start
  [[ -f $runs/$name.ended ]] || continue
  printf '%-10s %14s s\n' "$name" "$(($(cat "$runs/$name.ended") - run_start))"
done
printf '%s\n' "${summary[@]}"
tree_unchanged || status=1
exit "$status"
