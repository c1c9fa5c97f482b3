#!/usr/bin/env bash
# Sets up etcd authorization for skylb and enables authentication.
# Idempotent: safe to run again against an already bootstrapped etcd.
#
#   role skylb    readwrite /skydns/  (DNS records)
#                 readwrite /skylb/   (metadata: leader election, claims with
#                                      each cluster's verdict on shared names)
#   role coredns  read      /skydns/
#   and the records of every view (skylb --view NAME=..., under /skydns-NAME/):
#   role skylb    readwrite /skydns-
#   role coredns  read      /skydns-
#   users skylb, coredns, root (root has role root), all without password:
#   they authenticate with a client certificate whose CN is the user name.
#
# Connection: the usual etcdctl environment, with root's client certificate:
#   ETCDCTL_ENDPOINTS=https://127.0.0.1:2379 ETCDCTL_CACERT=.../ca.crt \
#   ETCDCTL_CERT=.../root.crt ETCDCTL_KEY=.../root.key etcd/rbac-bootstrap.sh
# or the same as etcdctl flags after the script name:
#   etcd/rbac-bootstrap.sh --endpoints=... --cacert=... --cert=... --key=...
# Env: SKYLB_ETCDCTL (etcdctl binary, default <repo>/bin/etcdctl). Grants are
# added, never removed. (Earlier versions granted each view's prefix, named in
# SKYLB_VIEWS; those grants are covered by /skydns- and do no harm.)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
etcdctl=${SKYLB_ETCDCTL:-$here/../bin/etcdctl}
conn=("$@")

ctl() { "$etcdctl" "${conn[@]}" "$@"; }

# in_list ITEM LINES: ITEM is one of the lines of LINES. (Outputs are captured
# before grep: with pipefail, grep -q closing a pipe early would fail the
# writer with SIGPIPE.)
in_list() { grep -qxF -- "$1" <<<"$2"; }

ensure_role() {
	local roles
	roles=$(ctl role list)
	if in_list "$1" "$roles"; then
		echo "rbac: role $1 exists"
	else
		ctl role add "$1" >/dev/null
		echo "rbac: role $1 created"
	fi
}

# has_perm ROLE PERM PREFIX: ROLE already holds PERM (read or readwrite) on
# PREFIX. "role get" lists prefix ranges as "(prefix P)" under "KV Read:" and
# "KV Write:".
has_perm() {
	local out
	out=$(ctl role get "$1")
	awk -v perm="$2" -v want="(prefix $3)" '
		/^KV Read:/ { sec = "r" }
		/^KV Write:/ { sec = "w" }
		index($0, want) { got[sec] = 1 }
		END { exit !(got["r"] && (perm == "read" || got["w"])) }' <<<"$out"
}

# grant ROLE PERM PREFIX
grant() {
	if has_perm "$1" "$2" "$3"; then
		echo "rbac: role $1 has $2 on prefix $3"
	else
		ctl role grant-permission --prefix=true "$1" "$2" "$3" >/dev/null
		echo "rbac: role $1 granted $2 on prefix $3"
	fi
}

# ensure_user USER ROLE
ensure_user() {
	local users roles
	users=$(ctl user list)
	if in_list "$1" "$users"; then
		echo "rbac: user $1 exists"
	else
		ctl user add "$1" --no-password >/dev/null
		echo "rbac: user $1 created"
	fi
	# "user get" prints "User: NAME" and "Roles: R1 R2 ...".
	roles=$(ctl user get "$1")
	roles=$(sed -n 's/^Roles://p' <<<"$roles" | tr ' ' '\n')
	if in_list "$2" "$roles"; then
		echo "rbac: user $1 has role $2"
	else
		ctl user grant-role "$1" "$2" >/dev/null
		echo "rbac: user $1 granted role $2"
	fi
}

ensure_role skylb
grant skylb readwrite /skydns/
grant skylb readwrite /skylb/

ensure_role coredns
grant coredns read /skydns/

# Every view's tree, /skydns-NAME/, so that a view is declared by skylb's
# flags alone. Only skylb writes there, and CoreDNS reads it all anyway.
grant skylb readwrite /skydns-
grant coredns read /skydns-

ensure_user root root
ensure_user skylb skylb
ensure_user coredns coredns

status=$(ctl auth status)
if grep -q 'Authentication Status: true' <<<"$status"; then
	echo "rbac: authentication already enabled"
else
	ctl auth enable >/dev/null
	echo "rbac: authentication enabled"
fi
