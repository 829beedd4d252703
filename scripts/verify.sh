#!/usr/bin/env bash
# verify.sh MODULE_DIR... : each module is tidy and builds (and vets) with GOWORK=off, so its
# requirements are complete without the workspace.
#
# The released libraries (release/versions.txt) require each other at released versions, with
# no replace lines (a copy of examples/orders requires them so too). The check runs on a copy of
# each module's go.mod with a replace line for every library it does not replace already, to
# the library's folder here, so the versions it requires are read from the folders as they are,
# and every other module comes from the environment's module cache and GOPROXY (no module cache
# of its own: nothing is served under a released version). The added replace lines are dropped
# from the tidied copy before it is compared with go.mod. A module's go.sum lines for
# github.com/idgen/idgen modules are the hashes of the tagged releases (scripts/release.sh writes
# them, from a local module proxy of the folders: go run ./tools/release proxy), which a replaced
# folder has none of: the check compares the rest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GOWORK=off
export GOFLAGS="$(go env GOFLAGS) -mod=mod"

modpath() { awk '$1 == "module" {print $2; exit}' "$1/go.mod"; }
libs=()     # PATH=FOLDER of each library
versions=() # PATH@VERSION of each library, its last release
while read -r d v; do
  libs+=("$(modpath "$root/$d")=$root/$d")
  versions+=("$(modpath "$root/$d")@$v")
done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/release/versions.txt")

ours='^github\.com/idgen/idgen/'
sums() { if [ -f "$1" ]; then grep -v "$ours" "$1" || true; fi; }
status=0
n=0
for m in "$@"; do
  n=$((n + 1))
  t="$work/$n"
  mkdir -p "$t"
  cp "$m/go.mod" "$t/go.mod"
  sums "$m/go.sum" >"$t/go.sum"
  self=$(modpath "$m")
  added=()
  for l in "${libs[@]}"; do
    p=${l%%=*}
    if [ "$p" != "$self" ] && ! grep -Eq "^[[:space:]]*(replace[[:space:]]+)?${p//./\\.}[[:space:]]+([^[:space:]]+[[:space:]]+)?=>" "$t/go.mod"; then
      go mod edit -replace="$l" "$t/go.mod"
      added+=("$p")
    fi
  done
  if ! (cd "$m" && go mod tidy -modfile="$t/go.mod"); then
    echo "verify: $m: go mod tidy fails"; status=1; continue
  fi
  cp "$t/go.mod" "$t/tidied.mod"
  for p in "${added[@]}"; do go mod edit -dropreplace="$p" "$t/tidied.mod"; done
  # A requirement tidy adds for a replaced library names no version: the diff names the release.
  for pv in "${versions[@]}"; do
    if grep -Eq "[[:space:]]${pv%@*} v0\.0\.0-00010101000000-000000000000" "$t/tidied.mod"; then
      go mod edit -require="$pv" "$t/tidied.mod"
    fi
  done
  if ! cmp -s "$m/go.mod" "$t/tidied.mod" || ! cmp -s <(sums "$m/go.sum") <(sums "$t/go.sum"); then
    echo "verify: $m: go mod tidy would change go.mod/go.sum:"
    diff -u "$m/go.mod" "$t/tidied.mod" || true
    diff -u <(sums "$m/go.sum") <(sums "$t/go.sum") || true
    status=1
  fi
  if ! (cd "$m" && go vet -modfile="$t/go.mod" ./...); then
    echo "verify: $m does not build without the workspace"; status=1
  fi
done
exit $status
