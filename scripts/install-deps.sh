#!/usr/bin/env bash
# Installs the Debian packages the local stack and its tests need:
# dig (bind9-dnsutils) and openssl. Runs `apt-get update` only when a package
# is actually missing. Works as root, or through sudo when it is available.
set -euo pipefail

# command-name:debian-package
wanted=(dig:bind9-dnsutils openssl:openssl)

missing=()
for entry in "${wanted[@]}"; do
	cmd=${entry%%:*} pkg=${entry#*:}
	if ! command -v "$cmd" >/dev/null 2>&1; then
		missing+=("$pkg")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all present (dig, openssl)"
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

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
