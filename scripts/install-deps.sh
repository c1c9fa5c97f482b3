#!/usr/bin/env bash
# Installs the Debian packages skylb's scripts need, by what they are for:
#
#   scripts/install-deps.sh playground   dig (bind9-dnsutils), openssl and curl:
#                                        what scripts/playground.sh and the
#                                        commands it prints need
#   scripts/install-deps.sh [all]        those, and for the tests: a BIND 9
#                                        parent zone (named, from bind9) and a
#                                        recursive resolver (unbound) for
#                                        test/delegation; containerd, runc, the
#                                        CNI plugins (containernetworking-plugins)
#                                        and iptables for the real cluster
#                                        (test/cluster, test/deploy); dnsperf
#                                        for the serving benchmark
#                                        (scripts/bench.sh)
#
# The tests run named, unbound and containerd as their own processes, with
# configuration files in directories of their own: the packages' system
# services are neither started by the installation nor enabled.
# Runs `apt-get update` only when a package is actually missing. Works as root,
# or through sudo when it is available.
set -euo pipefail

# command-name:debian-package; a command given as a path is a file the
# package installs outside PATH.
playground=(dig:bind9-dnsutils openssl:openssl curl:curl)
tests=(named:bind9 unbound:unbound
	containerd:containerd runc:runc /usr/lib/cni/bridge:containernetworking-plugins
	iptables:iptables dnsperf:dnsperf)
case ${1:-all} in
playground) wanted=("${playground[@]}") ;;
all) wanted=("${playground[@]}" "${tests[@]}") ;;
*)
	sed -n '2,/^set -e/p' "$0" | sed '$d' >&2
	exit 2
	;;
esac

# have reports whether a command exists; daemons live in /usr/sbin, which is
# not in every user's PATH.
have() {
	case $1 in
	/*) [ -x "$1" ] ;;
	*) command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] ;;
	esac
}

missing=()
for entry in "${wanted[@]}"; do
	cmd=${entry%%:*} pkg=${entry#*:}
	if ! have "$cmd"; then
		missing+=("$pkg")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all present (${wanted[*]%%:*})"
	exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo)
else
	echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
	exit 1
fi

# Keep the packages' services from starting while they are installed: Debian's
# maintainer scripts ask /usr/sbin/policy-rc.d, and 101 means "not now". An
# existing policy (Docker images have one) is left as it is.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\n# Written by skylb scripts/install-deps.sh during an installation.\nexit 101\n' |
		"${as_root[@]}" tee "$policy" >/dev/null
	"${as_root[@]}" chmod 755 "$policy"
	trap '"${as_root[@]}" rm -f "$policy"' EXIT
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends "${missing[@]}"

# Under systemd the units are enabled on installation: disable them (and stop
# any that started anyway), so that nothing listens on port 53 behind the
# tests' back, and no containerd serves /run/containerd. The tests start
# named, unbound and containerd themselves.
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	for pkg in "${missing[@]}"; do
		case $pkg in
		bind9) units=(named.service) ;;
		unbound) units=(unbound.service unbound-resolvconf.service) ;;
		containerd) units=(containerd.service) ;;
		*) continue ;;
		esac
		"${as_root[@]}" systemctl disable --now "${units[@]}" >/dev/null 2>&1 || true
	done
fi
