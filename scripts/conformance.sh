#!/usr/bin/env bash
# Runs upstream's Kubernetes LoadBalancer specs ([Feature:LoadBalancer] of
# k8s.io/kubernetes/test/e2e/network, at the Kubernetes version skylb
# ships) against skylb in the real three-node cluster (test/conformance,
# root only): all 17 of them, about 40 minutes on two cores. It prints the
# table of results (spec, result, time) and writes it to
# .cluster/conformance/e2e/results.md, e2e.test's log beside it.
#
# scripts/test.sh runs the quick ones only (test/conformance's Spec.Quick).
# It builds what it needs first: e2e.test and agnhost (scripts/build-bins.sh
# e2e.test agnhost; the first build takes about 15 minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

scripts/install-deps.sh
scripts/build-bins.sh kube-apiserver kube-controller-manager kube-node kubectl coredns etcd etcdctl etcdutl e2e.test agnhost

status=0
SKYLB_CONFORMANCE=all go test -count=1 -timeout 110m -v -run TestLoadBalancerSpecs ./test/conformance || status=$?
if [ -f .cluster/conformance/e2e/results.md ]; then
	echo
	cat .cluster/conformance/e2e/results.md
	echo
	echo "conformance: results written to .cluster/conformance/e2e/results.md"
fi
exit "$status"
