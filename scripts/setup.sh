#!/usr/bin/env bash
# Installs what the tests need, when missing: Go tools at pinned versions under .tools/bin.
# Safe to run again; it only installs what is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local
bin="$PWD/.tools/bin"
mkdir -p "$bin"

staticcheck_version=v0.8.2
if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "$staticcheck_version"; then
  echo "setup: installing staticcheck $staticcheck_version"
  GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi
