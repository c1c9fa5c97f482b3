#!/usr/bin/env bash
# Prints the -ldflags that stamp skylb's version and commit from the checkout,
# for "skylb version":
#
#   go build -ldflags "$(scripts/version.sh)" -o skylb .
#
# The version is "git describe --tags --always --dirty" (v0.1.0, or
# v0.1.0-3-gabcdef0-dirty between tags and with changes), the commit
# "git rev-parse HEAD". Outside a Git checkout it prints nothing, and skylb
# says "dev" and "unknown". The Dockerfile takes the same two values as its
# build arguments VERSION and COMMIT.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
version=$(git describe --tags --always --dirty 2>/dev/null) || exit 0
commit=$(git rev-parse HEAD)
echo "-X github.com/skylb/skylb/internal/cli.version=$version -X github.com/skylb/skylb/internal/cli.commit=$commit"
