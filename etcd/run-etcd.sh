#!/usr/bin/env bash
# Runs etcd with the mutual-TLS flags of etcd/etcd.flags.
#
# Usage: etcd/run-etcd.sh CERT_DIR DATA_DIR CLIENT_URL PEER_URL [ETCD_FLAG...]
#   e.g. etcd/run-etcd.sh /tmp/certs /tmp/etcd-data \
#          https://127.0.0.1:23790 https://127.0.0.1:23800 --log-level=warn
# Env:   SKYLB_ETCD (etcd binary, default <repo>/bin/etcd),
#        SKYLB_ETCD_NAME (member name, default skylb-etcd).
# Extra flags are appended, e.g. --listen-metrics-urls=http://127.0.0.1:PORT
# for a plain-HTTP /health and /metrics endpoint.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
etcd=${SKYLB_ETCD:-$here/../bin/etcd}
name=${SKYLB_ETCD_NAME:-skylb-etcd}

if [ $# -lt 4 ]; then
	sed -n '2,/^set -e/p' "$0" | sed '$d' >&2
	exit 2
fi
cert_dir=$(cd "$1" && pwd) data_dir=$2 client_url=$3 peer_url=$4
shift 4

flags=()
while IFS= read -r line; do
	line=${line%%#*}                          # strip comments
	line=${line#"${line%%[![:space:]]*}"}     # and surrounding blanks
	line=${line%"${line##*[![:space:]]}"}
	[ -n "$line" ] || continue
	line=${line//@NAME@/$name}
	line=${line//@DATA_DIR@/$data_dir}
	line=${line//@CERT_DIR@/$cert_dir}
	line=${line//@CLIENT_URL@/$client_url}
	line=${line//@PEER_URL@/$peer_url}
	flags+=("$line")
done <"$here/etcd.flags"

exec "$etcd" "${flags[@]}" "$@"
