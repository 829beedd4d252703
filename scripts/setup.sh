#!/usr/bin/env bash
# Installs what the tests need, when missing: Go tools at pinned versions under .tools/bin.
# Safe to run again; it only installs what is not there yet.
set -euo pipefail
cd "$(dirname "$0")/.."
# The Go the project pins (.go-version): fetched from the Go module proxy on first use.
export GOTOOLCHAIN="$(cat .go-version)"
bin="$PWD/.tools/bin"
mkdir -p "$bin"

install_go_tool() { # name version package
  if ! [ -x "$bin/$1" ] || ! grep -qx "$2" "$bin/.$1.version" 2>/dev/null; then
    echo "setup: installing $1 $2"
    GOBIN="$bin" go install "$3@$2"
    echo "$2" > "$bin/.$1.version"
  fi
}
# Terraform (MPL, v1.5.7): infra/terraform's checks, and make run, which plans the provider-free
# topology module for its callers' client configuration.
install_terraform() { install_go_tool terraform v1.5.7 github.com/hashicorp/terraform; }

# scripts/setup.sh run: only what make run needs (Terraform), for a machine that has not run the
# whole setup.
if [ "${1:-}" = run ]; then
  if ! [ -x "$bin/terraform" ]; then
    echo "setup: building Terraform v1.5.7 from the Go module proxy into .tools/bin, once (about 20 s): make run plans the topology module with it for the callers' client configuration"
  fi
  install_terraform
  exit 0
fi

# Analyzers load the standard library of the Go they run on: build them with the pinned Go, and
# again when it changes.
go_version=$(cat .go-version)
built_with() { [ -x "$1" ] && go version "$1" 2>/dev/null | grep -q ": $go_version\$"; }

staticcheck_version=v0.8.2
if ! "$bin/staticcheck" -version 2>/dev/null | grep -q "$staticcheck_version" || ! built_with "$bin/staticcheck"; then
  echo "setup: installing staticcheck $staticcheck_version"
  GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"
fi

govulncheck_version=v1.9.0
if ! grep -qx "$govulncheck_version $go_version" "$bin/.govulncheck.version" 2>/dev/null || ! built_with "$bin/govulncheck"; then
  echo "setup: installing govulncheck $govulncheck_version"
  GOBIN="$bin" go install "golang.org/x/vuln/cmd/govulncheck@$govulncheck_version"
  echo "$govulncheck_version $go_version" > "$bin/.govulncheck.version"
fi

# apidiff (golang.org/x/exp, pinned), for the check of each released library's API against its
# last release (tools/release). It reads export data of the Go it is built with: built with the
# pinned Go, and again when it changes.
apidiff_version=v0.0.0-20261113113407-e3970619a1a4
if ! grep -qx "$apidiff_version $go_version" "$bin/.apidiff.version" 2>/dev/null || ! built_with "$bin/apidiff"; then
  echo "setup: installing apidiff $apidiff_version"
  GOBIN="$bin" go install "golang.org/x/exp/cmd/apidiff@$apidiff_version"
  echo "$apidiff_version $go_version" > "$bin/.apidiff.version"
fi

# The Go vulnerability database, built locally from the golang.org/x/vulndb module at a pinned
# version (the public database is not reachable from every machine): make vulncheck reads it.
vulndb_version=v0.0.0-20261105234957-e22db6528018
vulndb="$PWD/.tools/vulndb"
if ! grep -qx "$vulndb_version" "$vulndb/.version" 2>/dev/null; then
  echo "setup: building the vulnerability database from golang.org/x/vulndb $vulndb_version"
  src=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@$vulndb_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  rm -rf "$vulndb"
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod go run "golang.org/x/vulndb/cmd/indexdb@$vulndb_version" -vulns "$src/data/osv" -out "$vulndb")
  echo "$vulndb_version" > "$vulndb/.version"
fi

# dynalite, the DynamoDB-compatible server the lease and registry tests talk to, and
# @cdktf/provider-aws, the AWS provider's schema the Terraform check reads (about 360 MB, no
# install scripts; its peers cdktf and constructs are not needed): both pinned in package-lock.json,
# installed once and again only when the lock changes or a package is missing.
cdktf_aws_version=$(sed -n '/"node_modules\/@cdktf\/provider-aws"/,/}/s/.*"version": "\(.*\)".*/\1/p' package-lock.json)
if [ ! -f node_modules/dynalite/cli.js ] || [ package-lock.json -nt node_modules/.package-lock.json ] ||
  ! grep -q "\"version\": \"$cdktf_aws_version\"" node_modules/@cdktf/provider-aws/package.json 2>/dev/null; then
  command -v npm >/dev/null || { echo "setup: npm is needed for dynalite (apt-get install -y nodejs npm)"; exit 1; }
  echo "setup: installing dynalite and @cdktf/provider-aws $cdktf_aws_version from package-lock.json"
  npm ci --ignore-scripts --no-audit --no-fund --legacy-peer-deps --silent
fi

# Code generation (make generate / checkgenerate): buf with local plugins, pinned.
install_go_tool buf v1.75.0 github.com/bufbuild/buf/cmd/buf
install_go_tool protoc-gen-go v1.36.12 google.golang.org/protobuf/cmd/protoc-gen-go
install_go_tool protoc-gen-connect-go v1.21.1 connectrpc.com/connect/cmd/protoc-gen-connect-go
install_go_tool grpcurl v1.9.3 github.com/fullstorydev/grpcurl/cmd/grpcurl

# Terraform (MPL, v1.5.7) and tflint (core rules), for infra/terraform: fmt, the provider-free
# topology module's init/validate/plan, and idgenctl infra.
install_terraform
install_go_tool tflint v0.64.0 github.com/terraform-linters/tflint

# redis-server (Debian), for the public-ID mapping store's tests: standalone and cluster.
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  echo "setup: installing redis-server (Debian)"
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq redis-server >/dev/null
fi

# The AWS CLI (Debian awscli 2.9), for the runbooks' DynamoDB commands, which the runbook tests run
# verbatim against dynalite (runbooks/harness adds --endpoint-url and placeholder credentials).
if ! [ -x /usr/bin/aws ]; then
  echo "setup: installing awscli (Debian)"
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq awscli >/dev/null
fi

# Prometheus and Alertmanager (Debian: prometheus 2.42 with promtool), for the alert rules' checks
# and unit tests and the dashboards' end-to-end test, which start both on loopback ports.
if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null || ! command -v prometheus-alertmanager >/dev/null; then
  echo "setup: installing prometheus and prometheus-alertmanager (Debian)"
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq prometheus prometheus-alertmanager >/dev/null
fi

# valgrind (Debian), whose callgrind counts the servers' instructions per request in make
# bench-http and make bench-publicid (bench/README.md).
if ! command -v valgrind >/dev/null || ! command -v callgrind_control >/dev/null; then
  echo "setup: installing valgrind (Debian)"
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq valgrind >/dev/null
fi

# spin (Debian), the Promela model checker for model/lease.pml.
if ! command -v spin >/dev/null; then
  echo "setup: installing spin (Debian)"
  if [ "$(id -u)" = 0 ]; then sudo_cmd=""; else sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq spin >/dev/null
fi
