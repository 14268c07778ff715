#!/usr/bin/env bash
# Fails when generated code, CRDs, RBAC, the Helm chart, the API reference or go.mod are stale, or
# Go files are not gofmt'ed: it regenerates everything and checks that nothing changed (uncommitted
# edits are compared too).
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(api config charts docs go.mod go.sum hack test/install)
state() { { git diff HEAD -- "${paths[@]}"; git ls-files --others --exclude-standard -- "${paths[@]}"; } | sha256sum; }
before=$(state)
make -s generate manifests helm generate-docs
go mod tidy
for m in hack/tools hack/lint hack/helmchart test/install; do (cd "$m" && go mod tidy); done
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
