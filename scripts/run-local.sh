#!/usr/bin/env bash
# Runs the local platform on embedded defaults. State lives under .idgen/ in the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "run-local: nothing to run yet" >&2
exit 1
