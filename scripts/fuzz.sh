#!/usr/bin/env bash
# fuzz.sh DURATION PKG... : runs every Fuzz target of the given packages for DURATION each.
set -euo pipefail
dur=$1; shift
for pkg in $(go list "$@"); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //'); do
    echo "fuzz: $pkg $target for $dur"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$dur" "$pkg"
  done
done
