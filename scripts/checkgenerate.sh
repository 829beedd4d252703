#!/usr/bin/env bash
# Fails when proto/ fails buf lint or buf format, or when libs/api differs from what buf generates.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/proto"
buf lint
buf format --diff --exit-code
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/proto" "$tmp/libs/api"
cp -r "$root/proto/." "$tmp/proto/"
(cd "$tmp/proto" && buf generate && buf build --exclude-imports -o "$tmp/libs/api/idgen/v1/idgen.binpb")
if ! diff -r -x go.mod -x go.sum -x doc.go -x descriptors.go "$tmp/libs/api" "$root/libs/api"; then
  echo "checkgenerate: libs/api is stale; run make generate"
  exit 1
fi
echo "checkgenerate: libs/api is up to date"
