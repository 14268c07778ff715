#!/usr/bin/env bash
# Builds Flux source-controller and kustomize-controller from the Go module proxy into bin/flux,
# once, for the end-to-end tests. Prints the directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bin/flux"
mkdir -p "$out"
# One build at a time: a second caller waits for the first and then uses its result.
exec 9>"$out/.lock"
flock 9
for c in source-controller kustomize-controller; do
  version=$(cd "$root/hack/flux/$c" && go list -m -f '{{.Version}}' "github.com/fluxcd/$c")
  if [ ! -x "$out/$c" ] || [ "$(cat "$out/.$c-version" 2>/dev/null)" != "$version" ]; then
    echo "building Flux $c $version (first time only, a few minutes)" >&2
    (cd "$root/hack/flux/$c" && go build -trimpath -ldflags "-s -w" -o "$out/$c" "github.com/fluxcd/$c")
    echo "$version" > "$out/.$c-version"
  fi
done
echo "$out"
