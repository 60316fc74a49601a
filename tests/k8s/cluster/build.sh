#!/usr/bin/env bash
# Build the binaries of the tests/k8s control plane from Go modules.
#
#   bash tests/k8s/cluster/build.sh            build (no-op when already built)
#   bash tests/k8s/cluster/build.sh --print-dir  print the directory of this key
#
# Everything lands in ${TRAINHUB_CACHE:-$HOME/.cache/trainhub}/k8s/:
#   go/{path,modcache,cache}   private GOPATH, GOMODCACHE and GOCACHE, shared by all keys
#   <key>/bin/                 etcd kube-apiserver kube-controller-manager kube-scheduler kwok kueue
#                              and the real node's kubelet kube-proxy coredns pause
#                              trainhub-device-plugin (each built when missing, on its own)
#   <key>/kueue/crds/          Kueue CRDs copied from the module
#   <key>/kueue/webhook.yaml   Kueue's webhook configurations (service-based; cluster.py rewrites them)
#   <key>/src/                 the generated Go module used to build the Kubernetes binaries
#   <key>/bin/helm, registry   Helm and distribution's registry (each rebuilt when its pinned
#                              version changes; bin/<name>.version)
#   <key>/VERSIONS             what was built, with the etcd version Kubernetes selected
# Only the Go module proxy is needed (no release downloads, no images).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

cache_root="${TRAINHUB_CACHE:-$HOME/.cache/trainhub}/k8s"
key="k8s-${K8S_VERSION}_kueue-${KUEUE_VERSION}_kwok-${KWOK_VERSION}"
dir="$cache_root/$key"
bin="$dir/bin"
binaries=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kueue)
# The real node's binaries: each one is complete once it is in bin/ (moved there whole),
# so adding one builds only that one, never the control plane again.
node_binaries=(kubelet kube-proxy coredns pause trainhub-device-plugin)
# Tools the tests drive, each `go install`ed from its own module at its pinned version.
helm_module="helm.sh/helm/${HELM_VERSION%%.*}"
distribution_module=github.com/distribution/distribution/v3
tools=("helm:$HELM_VERSION" "registry:$DISTRIBUTION_VERSION")
# Debian packages the real node runs on (command or file each one provides).
node_packages=(containerd:containerd runc:runc iptables:iptables conntrack:conntrack
  containernetworking-plugins:/usr/lib/cni/bridge busybox-static:/bin/busybox iproute2:ip)
deviceplugin_src="$here/deviceplugin"
# The device plugin is rebuilt when its source changes (cluster.py compares the same hash).
deviceplugin_hash() {
  (cd "$deviceplugin_src" && LC_ALL=C find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) \
    | sha256sum | cut -c1-16
}

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$dir"
  exit 0
fi

# --- Debian packages of the real node ---------------------------------------------
need_apt=()
for entry in "${node_packages[@]}"; do
  pkg="${entry%%:*}" what="${entry#*:}"
  if [[ "$what" == /* ]]; then [[ -e "$what" ]] || need_apt+=("$pkg")
  else command -v "$what" >/dev/null || need_apt+=("$pkg"); fi
done
if ((${#need_apt[@]})); then
  echo "[build.sh] installing Debian packages for the real node: ${need_apt[*]}"
  bash "$here/../../../scripts/debian-install.sh" --no-install-recommends "${need_apt[@]}"
fi

# One build at a time per cache (the test command and a developer may start one each): a second
# waits here, then finds the binaries built.
mkdir -p "$cache_root"
exec 9>"$cache_root/build.lock"
flock 9

complete() {
  [[ -f "$dir/.complete" ]] || return 1
  for b in "${binaries[@]}" "${node_binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
  [[ "$(cat "$bin/coredns.version" 2>/dev/null)" == "$COREDNS_VERSION" ]] || return 1
  for t in "${tools[@]}"; do
    [[ -x "$bin/${t%%:*}" && "$(cat "$bin/${t%%:*}.version" 2>/dev/null)" == "${t#*:}" ]] || return 1
  done
  [[ "$(cat "$bin/trainhub-device-plugin.source" 2>/dev/null)" == "$(deviceplugin_hash)" ]]
}
if complete; then
  echo "k8s test binaries already built: $bin"
  exit 0
fi

GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[[ -x "$GO" ]] || { echo "build.sh: no Go toolchain found (set GO=/path/to/go)" >&2; exit 1; }

export GOPATH="$cache_root/go/path"
export GOMODCACHE="$cache_root/go/modcache"
export GOCACHE="$cache_root/go/cache"
export GOFLAGS="-buildvcs=false -modcacherw"
export CGO_ENABLED=0
export GOTOOLCHAIN=local
# Two-core machines stay usable while this runs (the test command, whose tests wait for it,
# sets TRAINHUB_BUILD_NICE=0); one binary at a time keeps peak memory at one linker (~3 GiB for
# kube-apiserver).
run() { nice -n "${TRAINHUB_BUILD_NICE:-15}" "$@"; }

mkdir -p "$bin" "$GOPATH" "$GOMODCACHE" "$GOCACHE"
started=$SECONDS
step() { echo "[build.sh +$((SECONDS - started))s] $*"; }

# --- Kubernetes: a generated module that requires k8s.io/kubernetes ---------------
# k8s.io/kubernetes points its staging repos at ./staging/src/k8s.io/*, which a
# module consumer cannot use; the same replace list, rewritten to the published
# k8s.io/* v0.X.Y tags, is generated from its own go.mod.
k8s_missing=0
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
  [[ -x "$bin/$b" ]] || k8s_missing=1
done
src="$dir/src"
if (( k8s_missing )); then
step "resolving k8s.io/kubernetes@$K8S_VERSION"
k8s_gomod="$(cd /tmp && run "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "$k8s_gomod" ]] || { echo "build.sh: could not download k8s.io/kubernetes@$K8S_VERSION" >&2; exit 1; }
staging_version="v0.${K8S_VERSION#v1.}"
rm -rf "$src"
mkdir -p "$src/etcd"
replaces="$("$GO" mod edit -json "$k8s_gomod" | python3 -c '
import json, sys
mod = json.load(sys.stdin)
for r in mod.get("Replace") or []:
    old, new = r["Old"]["Path"], r["New"]["Path"]
    if new.startswith("./staging/src/"):
        print(f"-replace={old}={old}@" + sys.argv[1])
' "$staging_version")"
[[ -n "$replaces" ]] || { echo "build.sh: no staging replaces found in $k8s_gomod" >&2; exit 1; }
cat > "$src/go.mod" <<GOMOD
// Generated by tests/k8s/cluster/build.sh; do not edit.
module trainhub.test/k8sbuild

go 1.25.0
GOMOD
# shellcheck disable=SC2086
(cd "$src" && "$GO" mod edit -require="k8s.io/kubernetes@$K8S_VERSION" $replaces)
cat > "$src/etcd/main.go" <<'GOSRC'
// etcd built from the go.etcd.io/etcd/server/v3 version k8s.io/kubernetes requires.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GOSRC
step "resolving the module graph"
# -tool records the commands as tool directives, so go mod tidy keeps them.
(cd "$src" && run "$GO" get -tool \
  "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-scheduler@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kubelet@$K8S_VERSION" \
  "k8s.io/kubernetes/cmd/kube-proxy@$K8S_VERSION" && run "$GO" mod tidy)
k8s_minor="${K8S_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$k8s_minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

build_k8s() { # name package
  [[ -x "$bin/$1" ]] && { step "$1 already built"; return; }
  step "building $1 ($2)"
  (cd "$src" && run "$GO" build -trimpath -ldflags "$k8s_ldflags" -o "$bin/$1.tmp" "$2")
  mv "$bin/$1.tmp" "$bin/$1"
}
build_k8s etcd ./etcd
build_k8s kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build_k8s kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build_k8s kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
build_k8s kubelet k8s.io/kubernetes/cmd/kubelet
build_k8s kube-proxy k8s.io/kubernetes/cmd/kube-proxy

fi

k8s_dir="$(cd /tmp && "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"

# --- kwok: go install at the pinned tag, with its own go.mod ------------------------
if [[ -x "$bin/kwok" ]]; then
  step "kwok already built"
else
  step "building kwok (sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION)"
  (cd /tmp && GOBIN="$bin" run "$GO" install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
fi
kwok_src="$(cd /tmp && "$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"

# --- Kueue: built from a copy of its module (its own go.mod/go.sum) ------------------
# With internal cert management off, Kueue reads its metrics serving cert from the
# fixed path /etc/kueue/metrics/certs and the visibility server's from /visibility.
# A test control plane must not write there, so the copy is patched to make both
# paths overridable by KUEUE_METRICS_CERT_DIR / KUEUE_VISIBILITY_CERT_DIR (defaults
# unchanged). Nothing else in Kueue is changed. (go build -overlay cannot be used:
# Go refuses overlays of files inside GOMODCACHE.)
kueue_src="$(cd /tmp && "$GO" mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -x "$bin/kueue" ]]; then
  step "kueue already built"
else
  step "building kueue (sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION, cert paths patched)"
  ksrc="$dir/src-kueue"
  rm -rf "$ksrc" "$dir/kueue-overlay"
  cp -r "$kueue_src" "$ksrc"
  chmod -R u+w "$ksrc"
  main_go="$ksrc/cmd/kueue/main.go"
  vis_go="$ksrc/pkg/visibility/server.go"
  grep -q 'metricsCertPath := "/etc/kueue/metrics/certs"' "$main_go" \
    || { echo "build.sh: Kueue $KUEUE_VERSION no longer hard-codes the metrics cert path; revisit the patch" >&2; exit 1; }
  grep -q 'certDir = "/visibility"' "$vis_go" \
    || { echo "build.sh: Kueue $KUEUE_VERSION no longer hard-codes the visibility cert dir; revisit the patch" >&2; exit 1; }
  sed -i 's|metricsCertPath := "/etc/kueue/metrics/certs"|metricsCertPath := func() string { if d := os.Getenv("KUEUE_METRICS_CERT_DIR"); d != "" { return d }; return "/etc/kueue/metrics/certs" }()|' \
    "$main_go"
  sed -i -e 's|certDir = "/visibility"|certDir = func() string { if d := os.Getenv("KUEUE_VISIBILITY_CERT_DIR"); d != "" { return d }; return "/visibility" }()|' \
      -e '0,/^\t"net"$/s//\t"net"\n\t"os"/' "$vis_go"
  grep -q '^	"os"$' "$vis_go" || { echo "build.sh: could not add the os import to $vis_go" >&2; exit 1; }
  (cd "$ksrc" && run "$GO" build -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
    -o "$bin/kueue.tmp" ./cmd/kueue)
  mv "$bin/kueue.tmp" "$bin/kueue"
fi

# --- the real node: pause, CoreDNS, the device plugin -------------------------------
# pause: the sandbox container of every pod, Kubernetes' own pause.c (build/pause in the
# k8s.io/kubernetes module), compiled static as its Makefile does.
pause_tag="$(sed -n 's/^TAG ?= //p' "$k8s_dir/build/pause/Makefile")"
if [[ -x "$bin/pause" ]]; then
  step "pause already built"
else
  step "building pause $pause_tag (k8s.io/kubernetes@$K8S_VERSION/build/pause/linux/pause.c)"
  run "${CC:-cc}" -Os -Wall -Werror -static "-DVERSION=v$pause_tag-trainhub" \
    -o "$bin/pause.tmp" "$k8s_dir/build/pause/linux/pause.c"
  mv "$bin/pause.tmp" "$bin/pause"
fi
echo "$pause_tag" > "$dir/pause.version"

# CoreDNS: a main with the plugins the cluster's DNS uses (CoreDNS' documented way to
# choose plugins), in a module of its own requiring github.com/coredns/coredns.
if [[ -x "$bin/coredns" && "$(cat "$bin/coredns.version" 2>/dev/null)" == "$COREDNS_VERSION" ]]; then
  step "coredns already built"
else
  step "building coredns (github.com/coredns/coredns@$COREDNS_VERSION)"
  csrc="$dir/src-coredns"
  rm -rf "$csrc"
  mkdir -p "$csrc"
  cat > "$csrc/go.mod" <<GOMOD
// Generated by tests/k8s/cluster/build.sh; do not edit.
module trainhub.test/coredns

go 1.26.0
GOMOD
  cat > "$csrc/main.go" <<'GOSRC'
// CoreDNS with the plugins of the test cluster's DNS, in CoreDNS' own order (plugin.cfg).
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "log", "cache", "kubernetes"}
}

func main() { coremain.Run() }
GOSRC
  (cd "$csrc" && run "$GO" get "github.com/coredns/coredns@$COREDNS_VERSION" && run "$GO" mod tidy)
  (cd "$csrc" && run "$GO" build -trimpath \
    -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" \
    -o "$bin/coredns.tmp" .)
  mv "$bin/coredns.tmp" "$bin/coredns"
  echo "$COREDNS_VERSION" > "$bin/coredns.version"
fi

# The device plugin: source in tests/k8s/cluster/deviceplugin (its own go.mod/go.sum).
dp_hash="$(deviceplugin_hash)"
if [[ -x "$bin/trainhub-device-plugin" && "$(cat "$bin/trainhub-device-plugin.source" 2>/dev/null)" == "$dp_hash" ]]; then
  step "trainhub-device-plugin already built"
else
  step "building trainhub-device-plugin ($deviceplugin_src)"
  (cd "$deviceplugin_src" && run "$GO" test .)  # its IDs and allocations (main_test.go)
  (cd "$deviceplugin_src" && run "$GO" build -trimpath -ldflags "-s -w" \
    -o "$bin/trainhub-device-plugin.tmp" .)
  mv "$bin/trainhub-device-plugin.tmp" "$bin/trainhub-device-plugin"
  echo "$dp_hash" > "$bin/trainhub-device-plugin.source"
fi

# --- Helm and distribution's registry: go install at the pinned tags ----------------
# Each with its own go.mod/go.sum and no replace directives, so `go install pkg@version` builds
# exactly the release; installed into a directory of its own, then moved into bin/ whole.
go_install() { # name package version ldflags
  local name=$1 pkg=$2 version=$3 ldflags=$4 out="$dir/gobin-$1"
  if [[ -x "$bin/$name" && "$(cat "$bin/$name.version" 2>/dev/null)" == "$version" ]]; then
    step "$name already built"
    return
  fi
  step "building $name ($pkg@$version)"
  rm -rf "$out"
  (cd /tmp && GOBIN="$out" run "$GO" install -trimpath -ldflags "-s -w $ldflags" "$pkg@$version")
  mv "$out/${pkg##*/}" "$bin/$name"
  rm -rf "$out"
  echo "$version" > "$bin/$name.version"
}
# Helm's Makefile sets the same version variables from its git tag.
go_install helm "$helm_module/cmd/helm" "$HELM_VERSION" \
  "-X $helm_module/internal/version.version=$HELM_VERSION -X $helm_module/internal/version.gitTreeState=clean"
go_install registry "$distribution_module/cmd/registry" "$DISTRIBUTION_VERSION" \
  "-X $distribution_module/version.version=$DISTRIBUTION_VERSION -X $distribution_module/version.mainpkg=$distribution_module"

# --- manifests out of the module cache ----------------------------------------------
rm -rf "$dir/kueue" "$dir/kwok"
mkdir -p "$dir/kueue/crds" "$dir/kueue/crd-patches" "$dir/kwok/stages"
cp "$kueue_src"/config/components/crd/bases/*.yaml "$dir/kueue/crds/"
# The conversion-webhook patches the release enables (uncommented in its kustomization).
for p in $(sed -n 's|^- path: patches/\(webhook_in_.*\.yaml\)$|\1|p' "$kueue_src/config/components/crd/kustomization.yaml"); do
  cp "$kueue_src/config/components/crd/patches/$p" "$dir/kueue/crd-patches/"
done
cp "$kueue_src"/config/components/webhook/manifests.yaml "$dir/kueue/webhook.yaml"
# kwok's own stages for node lifecycle and pod readiness; the pod completion and
# deletion stages live in tests/k8s/cluster/kwok-stages.yaml.
cp "$kwok_src"/kustomize/stage/node/fast/node-initialize.yaml \
   "$kwok_src"/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
   "$kwok_src"/kustomize/stage/pod/fast/pod-ready.yaml "$dir/kwok/stages/"
chmod -R u+w "$dir/kueue" "$dir/kwok"

etcd_version="$(cd "$src" && "$GO" list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"
cat > "$dir/VERSIONS" <<VERS
kubernetes=$K8S_VERSION
staging=v0.${K8S_VERSION#v1.}
etcd=$etcd_version
kueue=$KUEUE_VERSION
kwok=$KWOK_VERSION
coredns=$COREDNS_VERSION
helm=$HELM_VERSION
registry=$DISTRIBUTION_VERSION
pause=$pause_tag
go=$("$GO" env GOVERSION)
VERS
touch "$dir/.complete"
step "done: $bin"
cat "$dir/VERSIONS"
