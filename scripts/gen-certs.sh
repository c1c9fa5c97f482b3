#!/usr/bin/env bash
# Generates the mutual-TLS material for the skylb etcd with openssl:
#
#   ca.crt/ca.key           certificate authority
#   server.crt/server.key   etcd client-facing server certificate
#   peer.crt/peer.key       etcd peer certificate (serverAuth + clientAuth)
#   skylb.crt/key           client certificate, CN=skylb   (the controller)
#   coredns.crt/key         client certificate, CN=coredns (the DNS server)
#   root.crt/key            client certificate, CN=root    (etcd administration)
#
# etcd maps a client certificate's CN to the etcd user of that name.
# All keys are ECDSA P-256, private keys are mode 0600.
#
# Idempotent: existing files are kept while they are valid (signed by ca.crt,
# matching their key, not expiring within CERT_RENEW_DAYS, and for server/peer
# carrying all expected names). --force regenerates everything.
#
# Usage: scripts/gen-certs.sh [--force] DIR
set -euo pipefail

# Kubernetes namespace and Service name of the in-cluster etcd.
NAMESPACE=${SKYLB_DNS_NAMESPACE:-skylb-dns}
SERVICE=${SKYLB_ETCD_SERVICE:-etcd}

CA_DAYS=${CA_DAYS:-3650}
CERT_DAYS=${CERT_DAYS:-825}
CERT_RENEW_DAYS=${CERT_RENEW_DAYS:-30}
CLIENTS=(skylb coredns root)

usage() {
	echo "usage: $0 [--force] DIR" >&2
	exit 2
}

force=false
dir=
for arg in "$@"; do
	case $arg in
	--force) force=true ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) [ -z "$dir" ] || usage; dir=$arg ;;
	esac
done
[ -n "$dir" ] || usage
mkdir -p "$dir"
cd "$dir"

# DNS and IP names of the etcd server and peer certificates.
SAN_DNS=(
	localhost
	"$SERVICE"
	"$SERVICE.$NAMESPACE"
	"$SERVICE.$NAMESPACE.svc"
	"$SERVICE.$NAMESPACE.svc.cluster.local"
	"*.$SERVICE.$NAMESPACE.svc"
	"*.$SERVICE.$NAMESPACE.svc.cluster.local"
	"*.$SERVICE"
)
SAN_IP=(127.0.0.1 ::1)

san_ext() {
	local out='' n
	for n in "${SAN_DNS[@]}"; do out+="DNS:$n,"; done
	for n in "${SAN_IP[@]}"; do out+="IP:$n,"; done
	echo "${out%,}"
}

# new_key FILE: writes a fresh ECDSA P-256 private key, mode 0600.
new_key() {
	(umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.tmp")
	mv -f "$1.tmp" "$1"
}

# key_matches CRT KEY: the certificate carries the key's public half.
key_matches() {
	[ "$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null)" = \
		"$(openssl pkey -in "$2" -pubout 2>/dev/null)" ]
}

# valid NAME [needs-sans]: NAME.crt/NAME.key exist and are usable.
valid() {
	local crt=$1.crt key=$1.key sans n
	[ -s "$crt" ] && [ -s "$key" ] || return 1
	key_matches "$crt" "$key" || return 1
	openssl x509 -in "$crt" -noout -checkend $((CERT_RENEW_DAYS * 86400)) >/dev/null || return 1
	if [ "$1" != ca ]; then
		openssl verify -CAfile ca.crt "$crt" >/dev/null 2>&1 || return 1
	fi
	if [ "${2:-}" = needs-sans ]; then
		# one "DNS:name" / "IP Address:addr" entry per line
		sans=$(openssl x509 -in "$crt" -noout -ext subjectAltName 2>/dev/null |
			tail -n +2 | tr ',' '\n' | sed 's/^ *//') || return 1
		for n in "${SAN_DNS[@]}"; do
			grep -qxF "DNS:$n" <<<"$sans" || return 1
		done
		grep -qxF "IP Address:127.0.0.1" <<<"$sans" || return 1
		grep -qxF "IP Address:0:0:0:0:0:0:0:1" <<<"$sans" || return 1
	fi
	return 0
}

# sign NAME CN EXTENSIONS: issues NAME.crt for a new NAME.key, signed by the CA.
sign() {
	local name=$1 cn=$2 ext=$3
	new_key "$name.key"
	openssl req -new -key "$name.key" -subj "/O=skylb/CN=$cn" -out "$name.csr"
	openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key \
		-set_serial "0x$(openssl rand -hex 16)" -days "$CERT_DAYS" -sha256 \
		-extfile <(printf '%s\n' "$ext") -out "$name.crt.tmp" 2>/dev/null
	rm -f "$name.csr"
	chmod 0644 "$name.crt.tmp"
	mv -f "$name.crt.tmp" "$name.crt"
	echo "gen-certs: created $name.crt (CN=$cn)"
}

# --- CA --------------------------------------------------------------------
if $force || ! valid ca; then
	new_key ca.key
	openssl req -x509 -new -key ca.key -sha256 -days "$CA_DAYS" \
		-subj "/O=skylb/CN=skylb-etcd-ca" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" \
		-out ca.crt.tmp
	chmod 0644 ca.crt.tmp
	mv -f ca.crt.tmp ca.crt
	echo "gen-certs: created ca.crt"
	force=true # everything signed by the old CA is now invalid
fi

leaf_common="basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid"

# --- etcd server and peer ----------------------------------------------------
# The server certificate also carries clientAuth: etcd's built-in gRPC gateway
# dials the server with it when --client-cert-auth is on.
for name in server peer; do
	if $force || ! valid "$name" needs-sans; then
		sign "$name" "etcd-$name" "$leaf_common
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$(san_ext)"
	fi
done

# --- clients -----------------------------------------------------------------
for name in "${CLIENTS[@]}"; do
	if $force || ! valid "$name" ||
		! openssl x509 -in "$name.crt" -noout -subject | grep -q "CN *= *$name\$"; then
		sign "$name" "$name" "$leaf_common
extendedKeyUsage=clientAuth"
	fi
done

chmod 0600 ./*.key
echo "gen-certs: certificates ready in $(pwd)"
