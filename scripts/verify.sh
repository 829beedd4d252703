#!/usr/bin/env bash
# verify.sh MODULE_DIR... : each module is tidy and builds (and vets) with GOWORK=off, so its
# sibling replace lines are complete.
set -euo pipefail
status=0
for m in "$@"; do
  if ! (cd "$m" && go mod tidy -diff >/dev/null); then
    echo "verify: $m: go mod tidy would change go.mod/go.sum:"; (cd "$m" && go mod tidy -diff) || true; status=1
  fi
  if ! (cd "$m" && GOWORK=off go vet ./... ); then
    echo "verify: $m does not build without the workspace"; status=1
  fi
done
exit $status
