#!/usr/bin/env bash
# Builds skylb's container image without a container engine, from the
# Dockerfile's recipe: its go build command (read from its RUN line), with
# CGO_ENABLED=0 and cross-compiled for each platform, on the files of
# distroless static:nonroot that skylb needs, as user 65532:65532 with the
# entrypoint /skylb (test/images/cmd/skylb-image, with go-containerregistry).
# For several platforms the image is an index, as docker buildx makes it.
# Options: scripts/image.sh --help.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CALLER=$PWD
cd "$ROOT"
command -v go >/dev/null 2>&1 || PATH=$PATH:/usr/local/go/bin

usage() {
	cat <<'EOF'
usage: scripts/image.sh [--out FILE [--format oci|docker]] [--import] [--push]
                        [--repo REPO] [--tag TAG] [--platform LIST]

Builds skylb's image without Docker, as the Dockerfile builds it, stamped with
the version and commit of scripts/version.sh (git describe --tags --always
--dirty, git rev-parse HEAD; "dev" outside a Git checkout), and does one or
more of:

  --out FILE       write it to FILE, by default as an OCI image layout tarball
                   of every platform (for ctr images import, podman load,
                   skopeo copy oci-archive:FILE)
  --format docker  write --out as a docker-archive tarball instead (the format
                   of docker save, for docker load and kind load
                   image-archive): one platform, so give --platform with one
  --import         import it into the local containerd for the kubelet:
                   $CTR -n k8s.io images import, as root (CTR is ctr unless
                   set: CTR="sudo ctr", CTR="k3s ctr"; CONTAINERD_ADDRESS
                   picks the socket). Without --out or --push, it builds the
                   host's platform only unless --platform is given
  --push           push it to REPO:TAG (every platform, as one index) with the
                   credentials of docker login (~/.docker/config.json and its
                   credential helpers, or $DOCKER_CONFIG)

  --repo REPO      repository (default: the one manifests/kustomization.yaml
                   names, ghcr.io/skylb/skylb)
  --tag TAG        tag (default: the version). The manifests ask for the tag
                   they pin: build at that release tag, or set newTag in your
                   overlay
  --platform LIST  comma-separated linux/ARCH platforms (default
                   linux/amd64,linux/arm64)
  -h, --help       print this help

It prints REPO:TAG@DIGEST, the digest of the image index, on stdout. Where
Docker runs, docker buildx build --platform linux/amd64,linux/arm64 . builds
the image from the Dockerfile itself.

Examples:
  scripts/image.sh --out skylb.tar
  CTR="sudo ctr" scripts/image.sh --import
  scripts/image.sh --repo registry.example.com/skylb --push
EOF
}

die() {
	echo "image.sh: $*" >&2
	echo "Run scripts/image.sh --help for the options." >&2
	exit 2
}

out='' format=oci import=false push=false repo='' tag='' platform=''
while [ $# -gt 0 ]; do
	case $1 in
	--out | --format | --repo | --tag | --platform)
		if [ $# -lt 2 ] || [ -z "$2" ]; then die "$1 needs a value"; fi
		declare "${1#--}=$2"
		shift
		;;
	--out=* | --format=* | --repo=* | --tag=* | --platform=*)
		opt=${1%%=*}
		declare "${opt#--}=${1#*=}"
		;;
	--import) import=true ;;
	--push) push=true ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument $1" ;;
	esac
	shift
done
[ -n "$out" ] || $import || $push || die "nothing to do: give --out FILE, --import or --push"
case $format in oci | docker) ;; *) die "--format $format: want oci or docker" ;; esac
if $import; then
	ctr=${CTR:-ctr}
	command -v "${ctr%% *}" >/dev/null 2>&1 || die "--import: ${ctr%% *} not found (set CTR)"
	# containerd keeps the host's platform only: build no other for it alone.
	if [ -z "$platform" ] && [ -z "$out" ] && ! $push; then
		platform=linux/$(go env GOARCH)
	fi
fi
if docker buildx version >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
	echo "image.sh: Docker runs here: docker buildx build --platform linux/amd64,linux/arm64 . builds the image from the Dockerfile too; this script builds it without Docker" >&2
fi

# The version and commit, as scripts/version.sh stamps them.
ldflags=$(scripts/version.sh)
version=$(sed -n 's/.*cli\.version=\([^ ]*\).*/\1/p' <<<"$ldflags")
commit=$(sed -n 's/.*cli\.commit=\([^ ]*\).*/\1/p' <<<"$ldflags")

args=(--root "$ROOT" --version "${version:-dev}" --commit "$commit")
[ -z "$repo" ] || args+=(--repo "$repo")
[ -z "$tag" ] || args+=(--tag "$tag")
[ -z "$platform" ] || args+=(--platform "$platform")
$push && args+=(--push)
if [ -n "$out" ]; then
	[[ $out == /* ]] || out=$CALLER/$out
	args+=(--out "$out" --format "$format")
elif $import; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	out=$tmp/skylb.tar
	format=oci
	args+=(--out "$out" --format oci)
fi

GOWORK=off go run ./test/images/cmd/skylb-image "${args[@]}"

if $import; then
	# shellcheck disable=SC2086 # CTR may be a command with arguments
	$ctr -n k8s.io images import "$out" >&2
fi
