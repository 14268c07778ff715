// Install tests: kustomize and Helm output applied to a real API server, and the manager run
// with exactly the flags and RBAC those manifests give it. A module of its own, so Helm's and
// kustomize's dependencies stay out of flotilla's go.mod.
module github.com/flotilla-dev/flotilla/test/install

go 1.26.0

replace github.com/flotilla-dev/flotilla => ../..

require (
	github.com/blang/semver/v4 v4.0.0 // indirect
	helm.sh/helm/v3 v3.22.0 // indirect
	sigs.k8s.io/kustomize/api v0.21.1 // indirect
)
