#!/usr/bin/env bash
# Runs the fault-injection suite (test/chaos) on the real local stack with a
# three-member etcd cluster, prints its report table (Markdown: fault,
# invariant, result, time to converge) and writes it to a file.
#
# Usage: scripts/chaos.sh [REPORT_FILE]   (default .chaos/report.md)
# It needs the binaries of scripts/build-bins.sh in bin/; scripts/test.sh runs
# it after the end-to-end tests. It takes about 6 minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

report=${1:-.chaos/report.md}
mkdir -p "$(dirname "$report")"
report=$(cd "$(dirname "$report")" && pwd)/$(basename "$report")
rm -f "$report"

status=0
go test -count=1 -timeout 20m ./test/chaos -args -report "$report" || status=$?
if [ -f "$report" ]; then
	echo
	cat "$report"
	echo
	echo "chaos: report written to $report"
fi
exit "$status"
