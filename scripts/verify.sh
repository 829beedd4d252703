#!/usr/bin/env bash
# verify.sh MODULE_DIR... : each module is tidy and builds (and vets) with GOWORK=off, so its
# requirements are complete without the workspace.
#
# The released libraries (release/versions.txt) require each other at released versions, with
# no replace lines (a copy of examples/orders requires them so too). Without the workspace those
# versions come from a local file-based module proxy made from the library folders here
# (go run ./tools/release proxy), and every other module from the environment's GOPROXY. A
# module's go.sum lines for github.com/idgen/idgen modules are the hashes of the tagged
# releases (scripts/release.sh writes them), which the folders here match only at a release:
# the check runs on copies of go.mod and go.sum without those lines and compares the rest, with a
# module cache of its own (kept in the user's cache folder, idgen-modcache/*-verify, from which
# the libraries are removed at each run: it never keeps a folder's zip as a released version).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
env_lines=$(cd "$root" && go run ./tools/release proxy -out "$work" -env -keep-cache verify)
while IFS= read -r kv; do export "${kv?}"; done <<<"$env_lines"

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
  if ! (cd "$m" && go mod tidy -modfile="$t/go.mod"); then
    echo "verify: $m: go mod tidy fails"; status=1; continue
  fi
  if ! cmp -s "$m/go.mod" "$t/go.mod" || ! cmp -s <(sums "$m/go.sum") <(sums "$t/go.sum"); then
    echo "verify: $m: go mod tidy would change go.mod/go.sum:"
    diff -u "$m/go.mod" "$t/go.mod" || true
    diff -u <(sums "$m/go.sum") <(sums "$t/go.sum") || true
    status=1
  fi
  if ! (cd "$m" && go vet -modfile="$t/go.mod" ./...); then
    echo "verify: $m does not build without the workspace"; status=1
  fi
done
exit $status
