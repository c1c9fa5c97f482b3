#!/usr/bin/env bash
# End-to-end smoke test of the local DNS stack, entirely on 127.0.0.1:
#
#   1. certificates (scripts/gen-certs.sh) into a temporary directory
#   2. etcd with mutual TLS (etcd/run-etcd.sh), RBAC bootstrap run twice
#   3. permission checks for the skylb, coredns and certificate-less clients
#   4. CoreDNS (coredns/Corefile) serving example.org from etcd, queried by dig
#   5. kube-apiserver on a second, plain-HTTP etcd, and kube-controller-manager
#      (skip with SMOKE_KUBE=0)
#
# Prints PASS/FAIL per check and exits non-zero on any failure. Bounded by
# SMOKE_TIMEOUT seconds (default 300); every process it starts is stopped and
# the temporary directory removed on exit (SMOKE_KEEP=1 keeps the directory).
# Needs the binaries of scripts/build-bins.sh and dig/openssl/curl/kubectl.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${BIN_DIR:-$ROOT/bin}
SMOKE_TIMEOUT=${SMOKE_TIMEOUT:-300}
SMOKE_KUBE=${SMOKE_KUBE:-1}
ZONE=example.org

for b in etcd etcdctl coredns; do
	[ -x "$BIN/$b" ] || { echo "missing $BIN/$b: run scripts/build-bins.sh" >&2; exit 2; }
done
for c in openssl dig curl; do
	command -v "$c" >/dev/null || { echo "missing $c: run scripts/install-deps.sh" >&2; exit 2; }
done
if [ "$SMOKE_KUBE" = 1 ]; then
	for b in kube-apiserver kube-controller-manager; do
		[ -x "$BIN/$b" ] || { echo "missing $BIN/$b: run scripts/build-bins.sh" >&2; exit 2; }
	done
	command -v kubectl >/dev/null || { echo "missing kubectl (or run with SMOKE_KUBE=0)" >&2; exit 2; }
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/skylb-smoke.XXXXXX")
PIDS=()          # every background process, for cleanup
declare -A PID   # component name -> process id
FAILED=0
WATCHDOG=

# --- process and cleanup handling ----------------------------------------------

cleanup() {
	local rc=$? pid i
	trap - EXIT INT TERM
	[ -z "$WATCHDOG" ] || kill "$WATCHDOG" 2>/dev/null || true
	# Stop in reverse start order (clients before the etcd they use).
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
		pid=${PIDS[i]}
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ "${SMOKE_KEEP:-0}" = 1 ]; then
		echo "smoke: kept $WORK" >&3
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
# fd 3 is the script's stderr, also while a check has redirected fd 2.
exec 3>&2
trap cleanup EXIT
trap 'exit 130' INT
trap 'echo "smoke: timed out after ${SMOKE_TIMEOUT}s" >&3; exit 124' TERM

# The watchdog polls once a second so that, once killed, nothing of it lingers.
(
	for ((i = 0; i < SMOKE_TIMEOUT; i++)); do sleep 1; done
	kill -TERM $$
) &
WATCHDOG=$!

# start NAME COMMAND...: runs COMMAND in the background, output in $WORK/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	PID[$name]=$!
}

# wait_for DESC SECONDS PID COMMAND...: polls COMMAND until it succeeds, fails
# early when process PID has exited.
wait_for() {
	local desc=$1 limit=$2 pid=$3 t0=$SECONDS
	shift 3
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "smoke: $desc: process exited" >&2
			return 1
		fi
		if ((SECONDS - t0 >= limit)); then
			echo "smoke: $desc: not ready after ${limit}s" >&2
			return 1
		fi
		sleep 0.2
	done
}

# show_log NAME: the tail of a component's log, after a failure.
show_log() {
	echo "----- last lines of $1.log -----" >&2
	tail -n 30 "$WORK/$1.log" >&2 || true
}

# --- checks --------------------------------------------------------------------

pass() { printf 'PASS  %s\n' "$1"; }
fail() {
	printf 'FAIL  %s\n' "$1"
	FAILED=$((FAILED + 1))
}

# check DESC COMMAND...: COMMAND must succeed.
check() {
	local desc=$1
	shift
	if "$@" >"$WORK/check.out" 2>&1; then pass "$desc"; else
		fail "$desc"
		sed 's/^/      /' "$WORK/check.out" | tail -n 5
	fi
}

# check_denied DESC PATTERN COMMAND...: COMMAND must fail with output
# matching PATTERN (an extended regular expression).
check_denied() {
	local desc=$1 pattern=$2
	shift 2
	if "$@" >"$WORK/check.out" 2>&1; then
		fail "$desc (command succeeded)"
	elif grep -Eq "$pattern" "$WORK/check.out"; then
		pass "$desc"
	else
		fail "$desc (unexpected error)"
		sed 's/^/      /' "$WORK/check.out" | tail -n 5
	fi
}

# --- free loopback ports -------------------------------------------------------

TAKEN=" "
port_in_use() {
	if command -v ss >/dev/null; then
		[ -n "$(ss -Htuan "( sport = :$1 )" 2>/dev/null)" ]
	else
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	fi
}
# alloc_port VAR: stores an unused TCP/UDP port number in VAR.
alloc_port() {
	local p
	for _ in $(seq 500); do
		p=$((20000 + RANDOM % 40000))
		case $TAKEN in *" $p "*) continue ;; esac
		port_in_use "$p" && continue
		TAKEN+="$p "
		printf -v "$1" '%s' "$p"
		return 0
	done
	echo "smoke: no free port found" >&2
	return 1
}

# --- 1. certificates -----------------------------------------------------------

CERTS=$WORK/certs
"$ROOT/scripts/gen-certs.sh" "$CERTS" >/dev/null
certs_unchanged() {
	local out
	out=$("$ROOT/scripts/gen-certs.sh" "$CERTS") && ! grep -q created <<<"$out"
}
keys_private() { [ -z "$(find "$CERTS" -name '*.key' ! -perm 600)" ]; }
check "gen-certs is idempotent (second run creates nothing)" certs_unchanged
check "private keys are mode 0600" keys_private

# --- 2. etcd with mutual TLS and RBAC --------------------------------------------

alloc_port ETCD_PORT
alloc_port ETCD_PEER_PORT
ETCD_URL=https://127.0.0.1:$ETCD_PORT
SKYLB_ETCD=$BIN/etcd start etcd "$ROOT/etcd/run-etcd.sh" "$CERTS" "$WORK/etcd-data" \
	"$ETCD_URL" "https://127.0.0.1:$ETCD_PEER_PORT" --log-level=warn

export ETCDCTL_ENDPOINTS=$ETCD_URL ETCDCTL_CACERT=$CERTS/ca.crt
export ETCDCTL_DIAL_TIMEOUT=3s ETCDCTL_COMMAND_TIMEOUT=5s
# as USER ETCDCTL-ARGS...: etcdctl authenticated by USER's client certificate.
as() {
	local user=$1
	shift
	"$BIN/etcdctl" --cert="$CERTS/$user.crt" --key="$CERTS/$user.key" "$@"
}
# anonymous ETCDCTL-ARGS...: etcdctl without a client certificate.
anonymous() { "$BIN/etcdctl" "$@"; }

t0=$SECONDS
if wait_for "etcd" 30 "${PID[etcd]}" as root endpoint health; then
	pass "etcd serves mutual TLS on $ETCD_URL ($((SECONDS - t0))s)"
else
	fail "etcd serves mutual TLS on $ETCD_URL"
	show_log etcd
	exit 1
fi

export SKYLB_ETCDCTL=$BIN/etcdctl
check "rbac-bootstrap (first run, root certificate from ETCDCTL_CERT/KEY)" \
	env ETCDCTL_CERT="$CERTS/root.crt" ETCDCTL_KEY="$CERTS/root.key" \
	"$ROOT/etcd/rbac-bootstrap.sh"
check "rbac-bootstrap (second run, root certificate as flags)" \
	"$ROOT/etcd/rbac-bootstrap.sh" --cert="$CERTS/root.crt" --key="$CERTS/root.key"
# (Output is captured before grep: with pipefail, grep -q closing the pipe
# early would fail the writer with SIGPIPE.)
auth_enabled() {
	local out
	out=$(as root auth status) && grep -q 'Authentication Status: true' <<<"$out"
}
check "authentication is enabled" auth_enabled

# --- 3. permissions ------------------------------------------------------------

check "skylb can put under /skydns/" as skylb put /skydns/org/example/smoke/x1 '{"host":"192.0.2.99","ttl":30}'
skylb_reads_skydns() {
	[ "$(as skylb get --print-value-only /skydns/org/example/smoke/x1)" = '{"host":"192.0.2.99","ttl":30}' ]
}
skylb_uses_meta() {
	as skylb put /skylb/smoke ok && [ "$(as skylb get --print-value-only /skylb/smoke)" = ok ]
}
check "skylb can get under /skydns/" skylb_reads_skydns
check "skylb can put and get under /skylb/" skylb_uses_meta
check "skylb can delete under /skydns/" as skylb del /skydns/org/example/smoke/x1
check_denied "skylb cannot put under /other/" "permission denied" as skylb put /other/x 1
check_denied "skylb cannot get under /other/" "permission denied" as skylb get /other/x
check "coredns can get under /skydns/" as coredns get --prefix /skydns/
check_denied "coredns cannot put under /skydns/" "permission denied" as coredns put /skydns/org/example/x 1
check_denied "coredns cannot put under /other/" "permission denied" as coredns put /other/x 1
check_denied "coredns cannot get under /skylb/" "permission denied" as coredns get /skylb/smoke
# refused_without_cert COMMAND...: COMMAND (a client without certificate)
# fails and etcd logs the rejected handshake. The client-side error varies
# (certificate required, broken pipe, connection reset, deadline exceeded).
refused_without_cert() {
	local pattern="didn't provide a certificate" before after
	before=$(grep -c "$pattern" "$WORK/etcd.log" || true)
	if "$@"; then
		echo "request without certificate succeeded"
		return 1
	fi
	after=$(grep -c "$pattern" "$WORK/etcd.log" || true)
	[ "$after" -gt "$before" ]
}
check "etcdctl without client certificate is refused" \
	refused_without_cert anonymous get /skydns/ --prefix
check "HTTPS without client certificate is refused" \
	refused_without_cert curl -sS --max-time 5 --cacert "$CERTS/ca.crt" "$ETCD_URL/health"

# --- 4. CoreDNS ----------------------------------------------------------------

alloc_port DNS_PORT
alloc_port HEALTH_PORT
alloc_port READY_PORT
alloc_port METRICS_PORT
start coredns env \
	SKYLB_DNS_ZONE=$ZONE SKYLB_DNS_BIND=127.0.0.1 SKYLB_DNS_PORT="$DNS_PORT" \
	SKYLB_ETCD_ENDPOINT="$ETCD_URL" SKYLB_ETCD_CERT="$CERTS/coredns.crt" \
	SKYLB_ETCD_KEY="$CERTS/coredns.key" SKYLB_ETCD_CA="$CERTS/ca.crt" \
	SKYLB_HEALTH_ADDR="127.0.0.1:$HEALTH_PORT" SKYLB_READY_ADDR="127.0.0.1:$READY_PORT" \
	SKYLB_METRICS_ADDR="127.0.0.1:$METRICS_PORT" \
	SKYLB_DNS_CACHE_TTL=5 \
	"$BIN/coredns" -conf "$ROOT/coredns/Corefile"

t0=$SECONDS
if wait_for "coredns" 30 "${PID[coredns]}" curl -fsS --max-time 2 "http://127.0.0.1:$READY_PORT/ready"; then
	pass "coredns is ready on 127.0.0.1:$DNS_PORT ($((SECONDS - t0))s)"
else
	fail "coredns is ready"
	show_log coredns
	exit 1
fi
check "coredns health endpoint" curl -fsS --max-time 2 "http://127.0.0.1:$HEALTH_PORT/health"

check "skylb publishes /skydns/org/example/web/x1" \
	as skylb put /skydns/org/example/web/x1 '{"host":"192.0.2.10","ttl":30}'

# dig_a NAME: A records of NAME from our CoreDNS, one per line.
dig_a() { dig @127.0.0.1 -p "$DNS_PORT" "$1" A +short +time=2 +tries=1; }
answer=
for _ in $(seq 10); do
	answer=$(dig_a "web.$ZONE" 2>&1) || true
	[ "$answer" = 192.0.2.10 ] && break
	sleep 0.5
done
if [ "$answer" = 192.0.2.10 ]; then
	pass "dig web.$ZONE A returns 192.0.2.10"
else
	fail "dig web.$ZONE A returns 192.0.2.10 (got: ${answer:-nothing})"
	show_log coredns
fi
ttl_capped() {
	local ttl
	ttl=$(dig @127.0.0.1 -p "$DNS_PORT" "web.$ZONE" A +noall +answer +time=2 +tries=1 |
		awk '{ print $2; exit }')
	echo "ttl=$ttl"
	[ -n "$ttl" ] && [ "$ttl" -le 30 ]
}
has_metrics() {
	local out
	out=$(curl -fsS --max-time 2 "http://127.0.0.1:$METRICS_PORT/metrics") &&
		grep -q '^coredns_dns_requests_total' <<<"$out"
}
check "dig reports TTL <= 30 s" ttl_capped
check "coredns exports Prometheus metrics" has_metrics

# --- 5. kube-apiserver and kube-controller-manager ---------------------------------

if [ "$SMOKE_KUBE" = 1 ]; then
	KUBE=$WORK/kube
	mkdir -p "$KUBE/certs"
	alloc_port KETCD_PORT
	alloc_port KETCD_PEER_PORT
	alloc_port APISERVER_PORT
	alloc_port KCM_PORT

	# Plain-HTTP etcd for the API server's own storage.
	start kube-etcd "$BIN/etcd" --name=kube --data-dir="$KUBE/etcd-data" \
		--listen-client-urls="http://127.0.0.1:$KETCD_PORT" \
		--advertise-client-urls="http://127.0.0.1:$KETCD_PORT" \
		--listen-peer-urls="http://127.0.0.1:$KETCD_PEER_PORT" \
		--initial-advertise-peer-urls="http://127.0.0.1:$KETCD_PEER_PORT" \
		--initial-cluster="kube=http://127.0.0.1:$KETCD_PEER_PORT" \
		--log-level=warn

	# Service-account signing key pair and a static admin token.
	(umask 077 && openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 \
		-out "$KUBE/sa.key" 2>/dev/null)
	openssl pkey -in "$KUBE/sa.key" -pubout -out "$KUBE/sa.pub"
	TOKEN=$(openssl rand -hex 24)
	(umask 077 && echo "$TOKEN,admin,admin,system:masters" >"$KUBE/tokens.csv")
	(umask 077 && cat >"$KUBE/admin.kubeconfig" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: local
		  cluster:
		    server: https://127.0.0.1:$APISERVER_PORT
		    certificate-authority: $KUBE/certs/apiserver.crt
		users:
		- name: admin
		  user:
		    token: $TOKEN
		contexts:
		- name: local
		  context:
		    cluster: local
		    user: admin
		current-context: local
	EOF
	)

	wait_for "kube etcd" 30 "${PID[kube-etcd]}" \
		curl -fsS --max-time 2 "http://127.0.0.1:$KETCD_PORT/health" || show_log kube-etcd

	t0=$SECONDS
	start kube-apiserver "$BIN/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$KETCD_PORT" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--secure-port="$APISERVER_PORT" \
		--cert-dir="$KUBE/certs" \
		--service-cluster-ip-range=10.96.0.0/16 \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$KUBE/sa.pub" \
		--service-account-signing-key-file="$KUBE/sa.key" \
		--authorization-mode=RBAC \
		--token-auth-file="$KUBE/tokens.csv" \
		--endpoint-reconciler-type=none \
		--profiling=false \
		--v=1

	kctl() { kubectl --kubeconfig="$KUBE/admin.kubeconfig" --request-timeout=5s "$@"; }
	if wait_for "kube-apiserver" 120 "${PID[kube-apiserver]}" kctl get --raw /readyz; then
		pass "kube-apiserver /readyz ok ($((SECONDS - t0))s after start)"
	else
		fail "kube-apiserver /readyz"
		show_log kube-apiserver
	fi
	check "kubectl (admin token) can list namespaces" kctl get namespaces

	t0=$SECONDS
	start kube-controller-manager "$BIN/kube-controller-manager" \
		--kubeconfig="$KUBE/admin.kubeconfig" \
		--authentication-kubeconfig="$KUBE/admin.kubeconfig" \
		--authorization-kubeconfig="$KUBE/admin.kubeconfig" \
		--authentication-skip-lookup=true \
		--bind-address=127.0.0.1 \
		--secure-port="$KCM_PORT" \
		--cert-dir="$KUBE/kcm-certs" \
		--service-account-private-key-file="$KUBE/sa.key" \
		--root-ca-file="$KUBE/certs/apiserver.crt" \
		--service-cluster-ip-range=10.96.0.0/16 \
		--flex-volume-plugin-dir="$KUBE/flexvolume" \
		--leader-elect=false \
		--profiling=false \
		--v=1
	if wait_for "kube-controller-manager" 60 "${PID[kube-controller-manager]}" \
		curl -fsSk --max-time 2 "https://127.0.0.1:$KCM_PORT/healthz"; then
		pass "kube-controller-manager /healthz ok ($((SECONDS - t0))s after start)"
	else
		fail "kube-controller-manager /healthz"
		show_log kube-controller-manager
	fi
	# The service-account controller creates "default" in every namespace.
	if wait_for "serviceaccount default/default" 60 "${PID[kube-controller-manager]}" \
		kctl get serviceaccount default -n default; then
		pass "kube-controller-manager created serviceaccount default/default ($((SECONDS - t0))s)"
	else
		fail "kube-controller-manager created serviceaccount default/default"
		show_log kube-controller-manager
	fi
fi

# --- result --------------------------------------------------------------------

if [ "$FAILED" -eq 0 ]; then
	echo "smoke: all checks passed"
else
	echo "smoke: $FAILED check(s) failed"
	exit 1
fi
