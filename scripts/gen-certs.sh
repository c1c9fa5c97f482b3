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
# --secrets OUTDIR also writes the certificates as Kubernetes Secret manifests
# (type kubernetes.io/tls with the keys ca.crt, tls.crt and tls.key, the layout
# cert-manager writes), one file per namespace, mode 0600, for
# "kubectl apply -f OUTDIR/FILE" once the namespace exists:
#
#   OUTDIR/skylb-dns.yaml      etcd-server, etcd-peer, etcd-root-client
#                              (root: the RBAC bootstrap Job)
#   OUTDIR/skylb-coredns.yaml  coredns-etcd-client
#   OUTDIR/skylb.yaml          skylb-etcd-client
#
# A file is rewritten only when its content changes.
#
# Usage: scripts/gen-certs.sh [--force] [--secrets OUTDIR] DIR
# Env:   SKYLB_DNS_NAMESPACE (etcd, default skylb-dns),
#        SKYLB_COREDNS_NAMESPACE (CoreDNS, default skylb-coredns),
#        SKYLB_NAMESPACE (skylb, default skylb),
#        SKYLB_ETCD_SERVICE, SKYLB_ETCD_CLIENT_SERVICE (the headless peer
#        Service and the client Service of etcd, default etcd and etcd-client).
set -euo pipefail

# Kubernetes namespaces, and the Service names of the in-cluster etcd.
NAMESPACE=${SKYLB_DNS_NAMESPACE:-skylb-dns}
COREDNS_NAMESPACE=${SKYLB_COREDNS_NAMESPACE:-skylb-coredns}
SKYLB_NAMESPACE=${SKYLB_NAMESPACE:-skylb}
SERVICE=${SKYLB_ETCD_SERVICE:-etcd}
CLIENT_SERVICE=${SKYLB_ETCD_CLIENT_SERVICE:-etcd-client}

CA_DAYS=${CA_DAYS:-3650}
CERT_DAYS=${CERT_DAYS:-825}
CERT_RENEW_DAYS=${CERT_RENEW_DAYS:-30}
CLIENTS=(skylb coredns root)

usage() {
	echo "usage: $0 [--force] [--secrets OUTDIR] DIR" >&2
	exit 2
}

force=false
dir=
secrets=
while [ $# -gt 0 ]; do
	case $1 in
	--force) force=true ;;
	--secrets)
		[ $# -ge 2 ] && [ -n "$2" ] || usage
		secrets=$2
		shift
		;;
	--secrets=*)
		secrets=${1#--secrets=}
		[ -n "$secrets" ] || usage
		;;
	-h | --help) usage ;;
	-*) usage ;;
	*) [ -z "$dir" ] || usage; dir=$1 ;;
	esac
	shift
done
[ -n "$dir" ] || usage
if [ -n "$secrets" ]; then
	mkdir -p "$secrets"
	secrets=$(cd "$secrets" && pwd)
fi
mkdir -p "$dir"
cd "$dir"

# DNS and IP names of the etcd server and peer certificates: the client
# Service (what skylb, CoreDNS and the RBAC bootstrap Job dial), the headless
# Service and its members (etcd-0.etcd.skylb-dns.svc, ...: peers and the
# members' advertised client URLs), and loopback for the local stack.
SAN_DNS=(
	localhost
	"$CLIENT_SERVICE"
	"$CLIENT_SERVICE.$NAMESPACE"
	"$CLIENT_SERVICE.$NAMESPACE.svc"
	"$CLIENT_SERVICE.$NAMESPACE.svc.cluster.local"
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

# --- Secret manifests (--secrets) ----------------------------------------------

# b64 FILE: FILE in base64 on one line (openssl, which is needed anyway, rather
# than base64, whose flags differ between GNU and BSD).
b64() { openssl base64 -A -in "$1"; }

# secret NAME NAMESPACE CERT: a Secret of type kubernetes.io/tls holding
# ca.crt, CERT.crt as tls.crt and CERT.key as tls.key.
secret() {
	cat <<-EOF
		---
		apiVersion: v1
		kind: Secret
		metadata:
		  name: $1
		  namespace: $2
		  labels:
		    app.kubernetes.io/part-of: skylb
		type: kubernetes.io/tls
		data:
		  ca.crt: $(b64 ca.crt)
		  tls.crt: $(b64 "$3.crt")
		  tls.key: $(b64 "$3.key")
	EOF
}

# write_secrets FILE [NAME NAMESPACE CERT]...: writes the Secrets to
# $secrets/FILE, mode 0600, unless it holds exactly that already.
write_secrets() {
	local file=$secrets/$1 tmp
	shift
	tmp=$(umask 077 && mktemp "$file.XXXXXX")
	{
		echo "# Written by scripts/gen-certs.sh. Private keys: keep out of Git."
		while [ $# -gt 0 ]; do
			secret "$1" "$2" "$3"
			shift 3
		done
	} >"$tmp"
	if cmp -s "$tmp" "$file"; then
		rm -f "$tmp"
		echo "gen-certs: $file is up to date"
	else
		chmod 0600 "$tmp"
		mv -f "$tmp" "$file"
		echo "gen-certs: wrote $file"
	fi
}

if [ -n "$secrets" ]; then
	write_secrets "$NAMESPACE.yaml" \
		etcd-server "$NAMESPACE" server \
		etcd-peer "$NAMESPACE" peer \
		etcd-root-client "$NAMESPACE" root
	write_secrets "$COREDNS_NAMESPACE.yaml" coredns-etcd-client "$COREDNS_NAMESPACE" coredns
	write_secrets "$SKYLB_NAMESPACE.yaml" skylb-etcd-client "$SKYLB_NAMESPACE" skylb
fi
