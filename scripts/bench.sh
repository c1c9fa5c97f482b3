#!/usr/bin/env bash
# Benchmarks skylb on the real local stack (test/stack, everything on
# loopback): propagation latency, cold start and restart at scale, one change
# at scale, idle cost, what a DNS query costs (Debian's dnsperf against the
# shipped Corefile and against a zone file served by the same CoreDNS) and the
# status writes of Services created before skylb starts; then, on the same
# stack and
# objects once skylb has stopped and its records are removed, external-dns
# (bin/external-dns, CoreDNS provider, --events): cold start, peak RSS, a
# Service's status change to the answer and idle cost; then the Go
# micro-benchmarks of the hot paths. Prints a Markdown table, with
# external-dns's column and the ratio, and writes the numbers as JSON.
#
# Usage: scripts/bench.sh [--quick] [--out FILE] [--keep] [other flags of test/bench]
#   --quick     smoke run: 200 Services, 40 Ingresses, 20 changes, short idle
#               and rate phases, no external-dns, no micro-benchmarks (well
#               under a minute once the binaries are built)
#   --external-dns=false   skylb only (--external-dns adds it to --quick)
#   --services N, --ingresses N, --namespaces N   the large cluster's size
#   --out FILE  JSON results (default .bench/results.json)
#   --keep      keep the stack's logs
#   --skylb-flag=--kube-api-qps=5   a flag skylb runs with (repeatable)
#   --status-services N   Services whose status writes are timed (default 1000)
#   --strict    exit 1 when an invariant breaks (a restart or a full
#               reconciliation writes keys, one change writes keys of other
#               names, idle range reads); slow timings never fail the run
#   --scale 1000,10000,30000   the scale run instead: at each number of
#               Services (100 and 20 Ingresses per namespace, the cluster grown
#               from one size to the next), skylb's and external-dns's cold
#               start, peak RSS and CPU, and a Service's status change to the
#               answer; writes .bench/scale.json and the chart
#               scripts/bench-scale.svg (--chart FILE)
# The full run took 14 minutes on 2 loaded cores, 3.6 of them external-dns's
# phase; it stops by itself (bounded counts and time limits) and stops every
# process it started.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

# external-dns runs in the full mode unless --external-dns=false, and in the
# quick mode only with --external-dns: build it only then.
quick=false external_dns=
for arg in "$@"; do
	case $arg in
	-quick | --quick | -quick=true | --quick=true) quick=true ;;
	-external-dns | --external-dns | -external-dns=true | --external-dns=true) external_dns=true ;;
	-external-dns=false | --external-dns=false) external_dns=false ;;
	esac
done
if [ -z "$external_dns" ]; then
	external_dns=true
	[ "$quick" = false ] || external_dns=false
fi

scripts/install-deps.sh >/dev/null
scripts/build-bins.sh >/dev/null
[ "$external_dns" = false ] || scripts/build-bins.sh external-dns >/dev/null

bin=$(mktemp -d "${TMPDIR:-/tmp}/skylb-bench-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/bench" ./test/bench
"$bin/bench" "$@"
