#!/usr/bin/env bash
# Builds the envtest binaries (kube-apiserver, etcd) from the Go module proxy into bin/k8s,
# once: release downloads are out of reach here. Prints the directory for KUBEBUILDER_ASSETS.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/bin/k8s"
k8s_version=v1.37.2
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ "$(cat "$out/.version" 2>/dev/null)" = "$k8s_version" ]; then
  echo "$out"
  exit 0
fi
mkdir -p "$out"
# One build at a time: a second caller waits for the first and then uses its result.
exec 9>"$out/.lock"
flock 9
if [ -x "$out/kube-apiserver" ] && [ -x "$out/etcd" ] && [ "$(cat "$out/.version" 2>/dev/null)" = "$k8s_version" ]; then
  echo "$out"
  exit 0
fi
cd "$root/hack/tools"
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
echo "building kube-apiserver $k8s_version and etcd (first time only, a few minutes)" >&2
go build -trimpath -ldflags "$ldflags" -o "$out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
echo "$k8s_version" > "$out/.version"
echo "$out"
