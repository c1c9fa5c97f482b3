#!/usr/bin/env bash
# Runs the fault-injection suite (test/chaos) on the real local stack with a
# three-member etcd cluster, prints its report table (Markdown: fault,
# invariant, result, time to converge) and writes it to a file.
#
# Usage: scripts/chaos.sh [--long] [REPORT_FILE]   (default .chaos/report.md)
#   --long   all of etcd down for 10 minutes (fault 3) and hung for 5 (fault
#            9) instead of 60 and 30 seconds: about 20 minutes in all
# It needs the binaries of scripts/build-bins.sh in bin/; scripts/test.sh runs
# it after the end-to-end tests. It takes about 6 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

long=() timeout=20m
if [ "${1:-}" = --long ]; then
	long=(-long) timeout=45m
	shift
fi
report=${1:-.chaos/report.md}
mkdir -p "$(dirname "$report")"
report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
rm -f "$report"

status=0
go test -count=1 -timeout "$timeout" ./test/chaos -args -report "$report" "${long[@]}" || status=$?
if [ -f "$report" ]; then
	echo
	cat "$report"
	echo
	echo "chaos: report written to $report"
fi
exit "$status"
