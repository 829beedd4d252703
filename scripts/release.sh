#!/usr/bin/env bash
# release.sh VERSION : releases every library of release/versions.txt at VERSION (vMAJOR.MINOR.PATCH)
# from a clean tree, as Go expects of a multi-module repository:
#
#  1. the changelog's "## Unreleased" section becomes "## VERSION (DATE)" under a new, empty
#     "## Unreleased";
#  2. release/versions.txt names VERSION for every library, and every module of the workspace
#     that requires a library requires it at VERSION; the libraries and the examples (examples/*,
#     which teams copy) replace none of the libraries with a folder, as a module outside the
#     repository cannot (the workspace, go.work, does that for development here);
#  3. each library, in dependency order, then every other module, is tidied without the
#     workspace against a local module proxy of the library folders (tools/release), so the
#     go.sum files carry the hashes of the libraries as tagged;
#  4. each library's exported API is written to release/api/DIR/VERSION.apidiff, the file the
#     API check of the next changes compares with (tools/release's tests);
#  5. it commits that, checks that a copy of each example builds with its go.sum as committed
#     against the libraries zipped from that commit, tags the commit DIR/VERSION for each library in dependency order
#     (libs/api/v0.1.0, libs/conn/v0.1.0, ...), and prints the push that publishes them.
#
# Run again at a VERSION already released here, it changes only what differs (nothing, on the
# same tree) and tags where the tags are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export GOTOOLCHAIN="$(cat .go-version)"
export PATH="$root/.tools/bin:$PATH"

version=${1:-${VERSION:-}}
if ! [[ "$version" =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]]; then
  echo "release: want VERSION as vMAJOR.MINOR.PATCH (v0.1.0), not \"$version\"" >&2; exit 2
fi
major=${BASH_REMATCH[1]}
if [ -n "$(git status --porcelain --untracked-files=all)" ]; then
  echo "release: the tree is not clean (git status): commit or stash first" >&2; exit 1
fi
mapfile -t libs < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' release/versions.txt | awk '{print $1}')
if [ -n "$(git status --porcelain --ignored "${libs[@]}")" ]; then
  echo "release: ignored files in the library folders would not be in the tags' zips:" >&2
  git status --porcelain --ignored "${libs[@]}" >&2; exit 1
fi
for d in "${libs[@]}"; do
  path=$(cd "$d" && go list -m -f '{{.Path}}')
  suffix=""; if [ "$major" -ge 2 ]; then suffix="/v$major"; fi
  if [ "${path%/v[0-9]*}$suffix" != "$path" ] || { [ "$major" -lt 2 ] && [[ "$path" =~ /v[0-9]+$ ]]; }; then
    echo "release: $d's module path $path does not fit $version (v2 and later need the path's /vN)" >&2; exit 1
  fi
done

# 1. The changelog.
today=$(date -u +%Y-%m-%d)
if ! grep -qx "## $version .*" CHANGELOG.md && ! grep -qx "## $version" CHANGELOG.md; then
  if ! awk '/^## Unreleased$/{u=1; next} /^## /{u=0} u && /[^[:space:]]/{found=1} END{exit !found}' CHANGELOG.md; then
    echo "release: CHANGELOG.md's \"## Unreleased\" section is empty: say what the release changes first" >&2; exit 1
  fi
  sed -i "s/^## Unreleased\$/## Unreleased\n\n## $version ($today)/" CHANGELOG.md
fi

# 2. The versions, and every requirement of a library.
for d in "${libs[@]}"; do sed -i "s|^$d v[^[:space:]]*\$|$d $version|" release/versions.txt; done
mapfile -t modules < <(go list -m -f '{{.Dir}}' | sed "s|^$root/||")
for m in "${modules[@]}"; do
  for d in "${libs[@]}"; do
    p="github.com/idgen/idgen/$d"
    if grep -Eq "^[[:space:]]*(require[[:space:]]+)?$p v" "$m/go.mod"; then
      (cd "$m" && go mod edit -require="$p@$version")
    fi
    if printf '%s\n' "${libs[@]}" | grep -qx "$m" || [[ "$m" == examples/* ]]; then
      (cd "$m" && go mod edit -dropreplace="$p")
    fi
  done
done

# 3. Tidy without the workspace: the libraries in dependency order (each one's go.sum holds the
# hashes of the ones before it, as they will be tagged), then every other module.
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
tidy() { # MODULE_DIR: go mod tidy against a proxy of the library folders as they are now
  # A new proxy, and a module cache without the libraries of the one before (third-party
  # modules stay).
  rm -rf "$work/proxy" "$work/modcache/github.com/idgen" "$work/modcache/cache/download/github.com/idgen"
  local kv
  while IFS= read -r kv; do export "${kv?}"; done <<<"$(go run ./tools/release proxy -out "$work" -env)"
  if [ -f "$1/go.sum" ]; then sed -i '/^github\.com\/idgen\/idgen\//d' "$1/go.sum"; fi
  (cd "$1" && go mod tidy)
  unset GOWORK GOFLAGS GOPROXY GONOSUMDB GOMODCACHE
}
for d in "${libs[@]}"; do tidy "$d"; done
for m in "${modules[@]}"; do
  if ! printf '%s\n' "${libs[@]}" | grep -qx "$m"; then tidy "$m"; fi
done

# 4. The API of each library at this version.
go run ./tools/release api-write

# 5. Commit, tag, and say what to push.
git add -A
if ! git diff --cached --quiet; then
  git commit -q -m "release $version: ${libs[*]} at $version (go.mod requirements, go.sum hashes, API files, changelog)"
fi
# A copy of each example, with its go.sum as committed, builds (-mod=readonly, go mod verify)
# against the libraries as the tags will serve them: zipped from this commit by git archive.
for ex in examples/*/; do
  rm -rf "$work/check" && mkdir -p "$work/check" && cp -r "$ex" "$work/check/copy"
  (
    while IFS= read -r kv; do export "${kv?}"; done <<<"$(go run ./tools/release proxy -out "$work/check" -rev HEAD -env)"
    export GOFLAGS="${GOFLAGS/-mod=mod/-mod=readonly}"
    cd "$work/check/copy" && go build ./... && go mod verify
  ) || { echo "release: $ex does not build from a copy against the libraries at HEAD" >&2; exit 1; }
done

tags=()
for d in "${libs[@]}"; do
  tag="$d/$version"
  if have=$(git rev-parse -q --verify "refs/tags/$tag^{commit}"); then
    if [ "$have" != "$(git rev-parse HEAD)" ]; then
      echo "release: tag $tag exists at ${have:0:12}, not at HEAD: a released version is never moved" >&2; exit 1
    fi
  else
    git tag -a "$tag" -m "$d $version"
  fi
  tags+=("$tag")
done
branch=$(git rev-parse --abbrev-ref HEAD)
echo "release: tagged $(git rev-parse --short HEAD) ${tags[*]}"
echo "release: publish with"
echo "  git push origin $branch ${tags[*]}"
