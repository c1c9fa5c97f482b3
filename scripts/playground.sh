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
# "up" installs missing packages (scripts/install-deps.sh), builds the pinned
# binaries (scripts/build-bins.sh) and the playground command, then starts
# (skylb built with its version and commit stamped by scripts/version.sh):
# the DNS etcd, the API server's etcd, kube-apiserver, kube-controller-manager,
# CoreDNS, a simulated kubelet and skylb; three Nodes node-1..3 (192.0.2.11-13,
# PodCIDRs 10.244.1-3.0/24); and in namespace demo a Deployment web (3 pods),
# a LoadBalancer Service web (also www.example.org) and an Ingress shop
# (shop.example.org). It returns once skylb is ready and web.demo.example.org
# answers through CoreDNS.
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

build() {
	mkdir -p "$DIR/bin"
	GOWORK=off go build -o "$BIN" ./test/playground
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
up)
	"$ROOT/scripts/install-deps.sh" playground
	"$ROOT/scripts/build-bins.sh"
	build
	exec "$BIN" up --dir "$DIR" --skylb-ldflags "$("$ROOT/scripts/version.sh")" "$@"
	;;
status | down | node-ready)
	[ -x "$BIN" ] || build
	exec "$BIN" "$cmd" --dir "$DIR" "$@"
	;;
-h | --help | help) usage ;;
*) usage ;;
esac
