#!/usr/bin/env bash
# Builds the pinned third-party binaries the local stack and the integration
# tests run, into bin/ at the repository root:
#
#   etcd, etcdctl, etcdutl                   go.etcd.io/etcd at the version etcd/
#                                            pins (test/tools/etcd/VERSION/go.mod)
#   etcd-VERSION                             every other etcd of test/tools/etcd/,
#                                            for the tests against other versions
#   kube-apiserver, kube-controller-manager  k8s.io/kubernetes  (test/tools/go.mod)
#   kube-node (+ symlinks kubelet,           k8s.io/kubernetes  (test/tools/go.mod)
#     kube-scheduler, kube-proxy)
#   coredns                                  github.com/coredns/coredns at the
#                                            version test/tools/coredns/go.mod
#                                            requires, with the plugins skylb's
#                                            Corefiles use (its main.go)
#   source-controller, kustomize-controller  github.com/fluxcd/NAME at the version
#                                            test/tools/flux/NAME/go.mod requires
#   cert-manager-controller                  github.com/cert-manager/cert-manager at
#                                            the version test/tools/cert-manager/
#                                            go.mod requires, through its main.go
#   promtool                                 github.com/prometheus/prometheus at the
#                                            version test/tools/prometheus/go.mod requires
#   helm                                     helm.sh/helm/v4 at the version
#                                            test/tools/helm/go.mod requires
#   external-dns                             sigs.k8s.io/external-dns at the version
#                                            test/tools/external-dns/go.mod requires;
#                                            only when named (scripts/bench.sh's full
#                                            run names it): no test needs it
#
# A binary is rebuilt only when its stamp file bin/.NAME.version differs from
# what would be built now (module version, Go version, and a hash of its
# go.mod, go.sum, main.go and the build flags), so bumping a version rebuilds
# what it affects and a second run is a no-op.
#
# CoreDNS, an independent module, builds in the background while the
# test/tools binaries build one after the other: on 2 cores this keeps both
# busy through the single-threaded link steps.
#
# Usage: scripts/build-bins.sh [NAME...]   (default: all of them but external-dns)
# Env:   BIN_DIR (default <repo>/bin), plus the usual Go variables
#        (GOCACHE, GOMODCACHE, GOPROXY, GOFLAGS, ...).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=$ROOT/test/tools
BIN_DIR=${BIN_DIR:-$ROOT/bin}
ETCD_DIR=$TOOLS/etcd
COREDNS_DIR=$TOOLS/coredns
FLUX_DIR=$TOOLS/flux
CERT_MANAGER_DIR=$TOOLS/cert-manager
PROMETHEUS_DIR=$TOOLS/prometheus
HELM_DIR=$TOOLS/helm
EXTERNAL_DNS_DIR=$TOOLS/external-dns

# etcd_pinned: the etcd version etcd/kustomization.yaml pins for
# registry.k8s.io/etcd (its tag 3.6.8-0 is etcd 3.6.8).
etcd_pinned() {
	awk '/- name: registry.k8s.io\/etcd$/ { want = 1; next }
		want && /newTag:/ { sub(/-[0-9]+$/, "", $2); print $2; exit }' "$ROOT/etcd/kustomization.yaml"
}
ETCD_VERSION=$(etcd_pinned)
if [ ! -f "$ETCD_DIR/$ETCD_VERSION/go.mod" ]; then
	echo "etcd/kustomization.yaml pins etcd '$ETCD_VERSION', but test/tools/etcd/$ETCD_VERSION/go.mod does not exist" >&2
	exit 2
fi
ETCD_OTHERS=()
for dir in "$ETCD_DIR"/*/; do
	v=$(basename "$dir")
	[ "$v" = "$ETCD_VERSION" ] || ETCD_OTHERS+=("etcd-$v")
done
ALL=(etcd etcdctl etcdutl "${ETCD_OTHERS[@]}" kube-apiserver kube-controller-manager kube-node coredns
	source-controller kustomize-controller cert-manager-controller
	promtool helm)
# Built only when named.
ON_REQUEST=(external-dns)
# The commands kube-node runs, by the name it is called with.
KUBE_NODE_LINKS=(kubelet kube-scheduler kube-proxy)

command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin
export CGO_ENABLED=0 GOWORK=off
# Small binaries, faster links: no symbol table, no DWARF (which is then not
# worth generating at compile time either).
BUILD_FLAGS=(-trimpath "-gcflags=all=-dwarf=false")
LDFLAGS_BASE="-s -w"

mkdir -p "$BIN_DIR"
BIN_DIR=$(cd "$BIN_DIR" && pwd)
GO_VERSION=$(go env GOVERSION)
START=$SECONDS
BG_PID=

log() { printf '[build-bins] %s\n' "$*"; }

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# digest [FILE...]: short content hash of the given files and of stdin.
digest() { cat "$@" - | sha256sum | cut -c1-16; }

# tools_version MODULE: version of MODULE selected by test/tools/go.mod.
tools_version() { (cd "$TOOLS" && go list -m -f '{{.Version}}' "$1"); }

# kube_ldflags VERSION: the version stamping upstream's build applies.
kube_ldflags() {
	local v=$1 major minor pkg out=''
	major=${v#v} major=${major%%.*}
	minor=${v#v"$major".} minor=${minor%%.*}
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		out+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		out+=" -X $pkg.gitTreeState=clean"
	done
	echo "$out"
}

# plan NAME: sets VERSION, LDFLAGS and STAMP for NAME, and MODDIR and PKG,
# the module directory to build in and the package to build.
plan() {
	local module='' files=() etcd_version='' tool_dir=''
	case $1 in
	etcd | etcdctl | etcdutl) etcd_version=$ETCD_VERSION ;;
	etcd-*) etcd_version=${1#etcd-} ;;
	kube-apiserver | kube-controller-manager | kube-node) module=k8s.io/kubernetes ;;
	# Each of these has a module of its own under test/tools that pins the
	# upstream module; PKG is the command, the tool of that go.mod.
	coredns)
		# A main of our own: CoreDNS with the plugins skylb's Corefiles use.
		module=github.com/coredns/coredns tool_dir=$COREDNS_DIR PKG=. ;;
	source-controller | kustomize-controller)
		module=github.com/fluxcd/$1 tool_dir=$FLUX_DIR/$1 PKG=github.com/fluxcd/$1 ;;
	cert-manager-controller)
		# The upstream command's module is not on the module proxy: a main of
		# our own assembles the controllers from the library.
		module=github.com/cert-manager/cert-manager tool_dir=$CERT_MANAGER_DIR PKG=. ;;
	promtool)
		module=github.com/prometheus/prometheus tool_dir=$PROMETHEUS_DIR
		PKG=$module/cmd/promtool ;;
	helm) module=helm.sh/helm/v4 tool_dir=$HELM_DIR PKG=helm.sh/helm/v4/cmd/helm ;;
	external-dns)
		# v0.22.0: v0.23.0, the newest release, needs Go 1.27.
		module=sigs.k8s.io/external-dns tool_dir=$EXTERNAL_DNS_DIR PKG=$module ;;
	*)
		echo "unknown binary '$1' (known: ${ALL[*]} ${ON_REQUEST[*]})" >&2
		exit 2
		;;
	esac
	LDFLAGS=$LDFLAGS_BASE
	if [ -n "$etcd_version" ]; then
		# The etcd modules' own main packages, listed as tools in their go.mod.
		MODDIR=$ETCD_DIR/$etcd_version PKG=go.etcd.io/etcd/server/v3
		[ "$1" != etcdctl ] || PKG=go.etcd.io/etcd/etcdctl/v3
		[ "$1" != etcdutl ] || PKG=go.etcd.io/etcd/etcdutl/v3
		[ -f "$MODDIR/go.mod" ] || {
			echo "unknown binary '$1': no test/tools/etcd/$etcd_version/go.mod" >&2
			exit 2
		}
		VERSION=v$etcd_version
		files=("$MODDIR/go.mod" "$MODDIR/go.sum")
	elif [ -n "$tool_dir" ]; then
		MODDIR=$tool_dir
		VERSION=$(cd "$MODDIR" && go list -m -f '{{.Version}}' "$module")
		files=("$MODDIR/go.mod" "$MODDIR/go.sum")
		[ ! -f "$MODDIR/main.go" ] || files+=("$MODDIR/main.go")
		# Stamped with their version as upstream's release builds do.
		case $1 in
		helm) LDFLAGS+=" -X $module/internal/version.version=$VERSION -X $module/internal/version.gitTreeState=clean" ;;
		external-dns) LDFLAGS+=" -X $module/pkg/apis/externaldns.Version=$VERSION" ;;
		esac
	else
		MODDIR=$TOOLS PKG=./cmd/$1
		VERSION=$(tools_version "$module")
		files=("$TOOLS/go.mod" "$TOOLS/go.sum" "$TOOLS/cmd/$1/main.go")
	fi
	[ "$module" != k8s.io/kubernetes ] || LDFLAGS+=$(kube_ldflags "$VERSION")
	STAMP="$VERSION $GO_VERSION $(digest "${files[@]}" <<<"${BUILD_FLAGS[*]} $LDFLAGS")"
}

# current NAME: bin/NAME exists and its stamp equals $STAMP.
current() {
	[ -x "$BIN_DIR/$1" ] && [ -f "$BIN_DIR/.$1.version" ] &&
		[ "$(cat "$BIN_DIR/.$1.version")" = "$STAMP" ]
}

# build_tool NAME: builds PKG in MODDIR (from plan) into bin/.NAME.tmp.
build_tool() {
	rm -f "$BIN_DIR/.$1.tmp"
	(cd "$MODDIR" && go build "${BUILD_FLAGS[@]}" -ldflags="$LDFLAGS" \
		-o "$BIN_DIR/.$1.tmp" "$PKG")
}

# start_coredns: starts building CoreDNS in the background, into
# bin/.coredns.tmp. Sets BG_PID to the go command's process id.
start_coredns() {
	(cd "$MODDIR" && exec go build "${BUILD_FLAGS[@]}" -ldflags="$LDFLAGS" \
		-o "$BIN_DIR/.coredns.tmp" "$PKG") >"$BIN_DIR/.coredns.log" 2>&1 &
	BG_PID=$!
}

# put_in_place NAME: moves bin/.NAME.tmp to bin/NAME, then writes its stamp.
put_in_place() {
	mv -f "$BIN_DIR/.$1.tmp" "$BIN_DIR/$1"
	echo "$STAMP" >"$BIN_DIR/.$1.version"
}

# link NAME: creates the symlinks a multi-call binary is run through.
link() {
	local l
	[ "$1" = kube-node ] || return 0
	for l in "${KUBE_NODE_LINKS[@]}"; do ln -sfn kube-node "$BIN_DIR/$l"; done
}

cleanup() {
	local rc=$?
	if [ -n "$BG_PID" ]; then
		kill "$BG_PID" 2>/dev/null || true
		wait "$BG_PID" 2>/dev/null || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

want=("$@")
[ ${#want[@]} -gt 0 ] || want=("${ALL[@]}")

# CoreDNS first, in the background.
core_stamp='' core_version='' core_t0=0
for name in "${want[@]}"; do
	[ "$name" = coredns ] || continue
	plan coredns
	if current coredns; then
		log "coredns $VERSION: up to date"
	elif [ -z "$BG_PID" ]; then
		log "coredns $VERSION: building in the background (log: $BIN_DIR/.coredns.log)..."
		core_stamp=$STAMP core_version=$VERSION core_t0=$SECONDS
		start_coredns
	fi
done

# The foreground builds, counted: "3 of 12" says how far along a first
# build is.
n=0 total=0
for name in "${want[@]}"; do [ "$name" = coredns ] || total=$((total + 1)); done
for name in "${want[@]}"; do
	[ "$name" != coredns ] || continue
	n=$((n + 1))
	plan "$name"
	if current "$name"; then
		link "$name"
		log "$name $VERSION: up to date"
		continue
	fi
	log "$name $VERSION: building ($n of $total, $(elapsed $((SECONDS - START))) so far)..."
	t0=$SECONDS
	build_tool "$name"
	put_in_place "$name"
	link "$name"
	log "$name $VERSION: built in $(elapsed $((SECONDS - t0))) (total $(elapsed $((SECONDS - START))))"
done

if [ -n "$BG_PID" ]; then
	log "coredns $core_version: waiting for the background build..."
	if ! wait "$BG_PID"; then
		BG_PID=
		log "coredns $core_version: FAILED, last lines of $BIN_DIR/.coredns.log:"
		tail -n 30 "$BIN_DIR/.coredns.log" >&2
		exit 1
	fi
	BG_PID=
	rm -f "$BIN_DIR/.coredns.log"
	STAMP=$core_stamp
	put_in_place coredns
	log "coredns $core_version: built in $(elapsed $((SECONDS - core_t0))) (total $(elapsed $((SECONDS - START))))"
fi
log "all done in $(elapsed $((SECONDS - START))), binaries in $BIN_DIR"
