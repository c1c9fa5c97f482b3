#!/usr/bin/env bash
# The skylb playground: the real local stack with skylb and a demo, running
# in the background until you stop it. Everything listens on 127.0.0.1 and
# lives in <repo>/.playground (certificates, data, logs/, admin.kubeconfig).
#
#   scripts/playground.sh up                     start (or report it is up) and print what to try
#   scripts/playground.sh status                 processes (pid, running/stopped) and endpoints
#   scripts/playground.sh down [--purge]         stop every process; --purge also removes .playground
#   scripts/playground.sh node-ready NODE true|false
#                                                set a Node's Ready condition
#
# "up" installs missing packages (scripts/install-deps.sh), compiles the
# standard library's shared packages while the modules download
# (scripts/build-bins.sh std ...), then builds the pinned binaries the stack runs
# (scripts/build-bins.sh etcd etcdctl kube-apiserver kube-controller-manager
# coredns) and meanwhile, in the background, skylb (its version and commit
# stamped by scripts/version.sh) and the playground command, with the pinned
# binaries' compiler flags so that they share the compiled standard library
# and modules. Then it starts:
# the DNS etcd, the API server's etcd, kube-apiserver, kube-controller-manager,
# CoreDNS, a simulated kubelet and skylb; three Nodes node-1..3 (192.0.2.11-13,
# PodCIDRs 10.244.1-3.0/24); and in namespace demo a Deployment web (3 pods),
# a LoadBalancer Service web (also www.example.org) and an Ingress shop
# (shop.example.org). skylb runs with the view internal (--view=internal=pods,
# --view-network=internal=127.0.0.2/32), whose CoreDNS block it writes into
# the ConfigMap skylb-coredns/coredns-views, copied beside the Corefile
# (.playground/coredns/skylb.view) as the kubelet does: CoreDNS answers queries
# from 127.0.0.2 from the view. It returns once skylb is ready and
# web.demo.example.org answers through CoreDNS.
#
# Fixed ports (127.0.0.1):
#   15353  DNS (CoreDNS, UDP and TCP), zone example.org
#   15354  CoreDNS /health    15355  CoreDNS /ready    15356  CoreDNS /metrics
#   23790  etcd of the DNS records (mutual TLS)        23800  its peer port
#   23791  etcd of the API server (HTTP)               23801  its peer port
#   16443  kube-apiserver     16444  kube-controller-manager /healthz
#   18080  skylb /healthz, /readyz, /metrics
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.playground
BIN=$DIR/bin/playground
cd "$ROOT"
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

usage() {
	sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# The binaries of scripts/build-bins.sh the stack runs (test/stack's Binaries).
STACK_BINS=(etcd etcdctl kube-apiserver kube-controller-manager coredns)
export GOWORK=off CGO_ENABLED=0
# skylb's and the playground command's go build flags: those of
# scripts/build-bins.sh (static, -trimpath, no DWARF), so that the packages
# they share with the pinned binaries (the standard library, gRPC, protobuf,
# the etcd client, ...) are compiled once; and skylb's version stamp.
BUILD_FLAGS=(-trimpath "-gcflags=all=-dwarf=false")

build() {
	mkdir -p "$DIR/bin"
	go build "${BUILD_FLAGS[@]}" -o "$BIN" ./test/playground
}

# skylb_bg go ARGS...: runs "go ARGS..." in the background for skylb and the
# playground command, in a process group of its own so that it can be stopped
# whole, its output appended to .playground/build.log; sets BG_PID.
BG_PID=
skylb_bg() {
	mkdir -p "$DIR/bin"
	(exec setsid "$@") >>"$DIR/build.log" 2>&1 &
	BG_PID=$!
	trap '[ -z "$BG_PID" ] || kill -- "-$BG_PID" 2>/dev/null || true' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
up)
	"$ROOT/scripts/install-deps.sh" playground
	SKYLB_FLAGS=("${BUILD_FLAGS[@]}" "-ldflags=$("$ROOT/scripts/version.sh")")
	t0=$SECONDS
	rm -f "$DIR/build.log"
	# All the modules download while the standard library compiles; then
	# skylb and the playground command
	# build (one go command: the packages they share compile once) into
	# .playground/bin while the pinned binaries do. The stack builds skylb
	# again with the same flags, which finds it up to date.
	skylb_bg bash -c 'exec go list -deps ./test/playground . >/dev/null'
	"$ROOT/scripts/build-bins.sh" std "${STACK_BINS[@]}"
	wait "$BG_PID" || true
	echo "playground: building skylb and the playground command in the background (log: ${DIR#"$ROOT"/}/build.log)"
	skylb_bg go build "${SKYLB_FLAGS[@]}" -o "$DIR/bin/" ./test/playground .
	"$ROOT/scripts/build-bins.sh" "${STACK_BINS[@]}"
	if kill -0 "$BG_PID" 2>/dev/null; then
		echo "playground: waiting for skylb and the playground command..."
	fi
	if ! wait "$BG_PID"; then
		BG_PID=
		echo "playground: building skylb and the playground command FAILED:" >&2
		grep -v '^go: downloading' "$DIR/build.log" | tail -n 30 >&2
		exit 1
	fi
	BG_PID=
	echo "playground: skylb and the playground command built ($((SECONDS - t0))s since the builds began)"
	flags=()
	for f in "${SKYLB_FLAGS[@]}"; do flags+=(--skylb-build-flag "$f"); done
	exec "$BIN" up --dir "$DIR" "${flags[@]}" "$@"
	;;
status | down | node-ready)
	[ -x "$BIN" ] || build
	exec "$BIN" "$cmd" --dir "$DIR" "$@"
	;;
-h | --help | help) usage ;;
*) usage ;;
esac
