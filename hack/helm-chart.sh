#!/usr/bin/env bash
# Regenerates the Helm chart charts/flotilla from config/default (see hack/helmchart).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/hack/helmchart"
go run . -root "$root"
