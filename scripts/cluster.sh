#!/usr/bin/env bash
# Starts, shows or stops the real three-node Kubernetes cluster of
# test/cluster on this machine (root only): the control plane in the host
# network namespace, and three nodes, each with its own network and mount
# namespaces, containerd, kubelet and kube-proxy. The images of the
# repository's manifests are built first (test/images) and imported into
# every node.
#
#   scripts/cluster.sh up       start it; prints KUBECONFIG=<repo>/.cluster/admin.kubeconfig
#   scripts/cluster.sh status   nodes, pods and the cluster's processes
#   scripts/cluster.sh down     stop it and remove everything it created
#
# Flags after the command go to test/cluster/cmd/cluster: -dir (default
# <repo>/.cluster), -bin (default <repo>/bin), -nodes (default 3), -etcd-bin
# (etcd, etcdctl and etcdutl of the etcd image's version, default -bin).
# Needs the binaries of scripts/build-bins.sh and the packages of
# scripts/install-deps.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

case ${1:-} in
up | down | status) ;;
*)
	sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"
	exit 2
	;;
esac

# Built once per change into .cluster/, so that the running command is not
# a "go run" child that signals would miss.
mkdir -p .cluster
GOWORK=off go build -o .cluster/cluster-cmd ./test/cluster/cmd/cluster
exec .cluster/cluster-cmd "$@"
