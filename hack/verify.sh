#!/usr/bin/env bash
# Fails when generated code, CRDs, RBAC or go.mod are stale, or Go files are not gofmt'ed: it
# regenerates everything and checks that nothing changed (uncommitted edits are compared too).
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(api config go.mod go.sum hack)
state() { { git diff HEAD -- "${paths[@]}"; git ls-files --others --exclude-standard -- "${paths[@]}"; } | sha256sum; }
before=$(state)
make -s generate manifests
go mod tidy
(cd hack/tools && go mod tidy)
(cd hack/lint && go mod tidy)
# -e: the Flux modules' own test dependencies are not all served by the module proxy.
for m in hack/flux/*/; do (cd "$m" && go mod tidy -e 2>/dev/null); done
after=$(state)
if [ "$before" != "$after" ]; then
  git status --short -- "${paths[@]}"
  echo "generated files or go.mod were stale and have been regenerated: review and commit them" >&2
  exit 1
fi
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt needed: $unformatted" >&2
  exit 1
fi
echo "verify: up to date"
