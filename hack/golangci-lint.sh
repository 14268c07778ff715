#!/usr/bin/env bash
# Runs golangci-lint, building it once from the Go module proxy into bin/ (release downloads are
# out of reach here). Arguments go to golangci-lint.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cd "$root/hack/lint" && go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
bin="$root/bin/golangci-lint-$version"
if [ ! -x "$bin" ]; then
  echo "building golangci-lint $version (first time only)" >&2
  (cd "$root/hack/lint" && go build -o "$bin" github.com/golangci/golangci-lint/v2/cmd/golangci-lint)
fi
cd "$root"
exec "$bin" "$@"
