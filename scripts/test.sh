#!/usr/bin/env bash
# Runs all of skylb's tests: formatting and vet, the unit and integration tests
# (a real etcd in-process), the end-to-end suite on the real local stack
# (etcd, kube-apiserver, kube-controller-manager, CoreDNS, skylb), the
# fault-injection suite (scripts/chaos.sh) and a smoke run of the benchmarks.
# It installs what it needs first: Debian's dig and openssl, and the pinned
# binaries built from Go modules into bin/ (cached; the first build takes
# several minutes).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

step() { printf '\n== %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh
scripts/build-bins.sh
# Upstream's LoadBalancer specs (test/conformance) and their image's command.
scripts/build-bins.sh e2e.test agnhost

step "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './test/tools/*'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

step "unit and integration tests"
go test -race -count=1 -timeout 15m ./ ./internal/...

step "fuzzing the parsers and mappers (${FUZZTIME:=10s} each)"
# Every fuzz target in the tree, each for a bounded time; a failure leaves its
# input under the package's testdata/fuzz for go test to replay.
grep -rl --include='*_test.go' '^func Fuzz' internal | while read -r file; do
	pkg=./$(dirname "$file")
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | cut -d' ' -f2); do
		echo "fuzz $pkg $target"
		out=$(go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1) && continue
		# go's fuzzing coordinator can end a run with "context deadline
		# exceeded" when a worker answers late at the end of -fuzztime; it
		# found nothing then (no failing input written): run it once more.
		if grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
			echo "$out" | tail -n 3
			echo "fuzz $pkg $target: the run ended on the fuzzing engine's deadline, not on an input; once more"
			out=$(go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" 2>&1) && continue
		fi
		echo "$out"
		exit 1
	done
done

step "end-to-end tests on the local stack"
# One package at a time: each starts its own stack. The fault-injection suite
# and the real cluster run next, each on its own. The tests of a package run
# in a random order (the seed is printed): none depends on another's leftovers.
go test -count=1 -p 1 -shuffle=on -timeout 20m $(go list ./test/... | grep -v -e '/test/chaos$' -e '/test/cluster$' -e '/test/deploy$' -e '/test/flux$' -e '/test/certmanager$' -e '/test/chart$' -e '/test/conformance$')

step "real cluster (three kubelet nodes)"
# containerd, kubelets and kube-proxy in network and mount namespaces of their
# own (root only; the tests skip otherwise): the cluster itself, the
# deployment of manifests/README.md in it, then the same with Flux's
# controllers, then with cert-manager's certificates, then upstream's quick
# LoadBalancer specs (scripts/conformance.sh runs all of them), one after the
# other (one cluster at a time).
go test -count=1 -p 1 -timeout 45m -v ./test/cluster ./test/deploy ./test/flux ./test/certmanager ./test/chart ./test/conformance

step "fault injection (three-member etcd cluster)"
scripts/chaos.sh

step "benchmark harness, once"
# Each micro-benchmark once, then the stack benchmark's quick mode (about 40
# seconds), so that a broken harness fails here and not on the next full run.
# --strict fails on a broken invariant (a restart that writes keys, a change
# that writes other names, idle range reads); timings never fail it.
go test -count=1 -run='^$' -bench=. -benchtime=1x ./internal/skydns ./internal/source ./internal/publish ./internal/controller
scripts/bench.sh --quick --strict --out .bench/quick.json
