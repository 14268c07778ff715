# flotilla — see README.md.
SHELL := bash
GO ?= go
BIN := $(CURDIR)/bin

.PHONY: all build demo test generate manifests verify lint vet fmt envtest flux

all: build

build: ## Build bin/flotilla.
	$(GO) build -o $(BIN)/flotilla ./cmd/flotilla

demo: build ## Run flotilla on an embedded sandbox fleet (no cluster needed).
	$(BIN)/flotilla demo

envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/k8s (once).
	@bash hack/envtest.sh >/dev/null

flux: ## Build Flux source-controller and kustomize-controller from the Go module proxy into bin/flux (once).
	@bash hack/flux.sh >/dev/null

test: envtest flux ## Run every test: real API server, real git over HTTP, real Flux controllers.
	KUBEBUILDER_ASSETS=$$(bash hack/envtest.sh) FLOTILLA_FLUX_BIN=$$(bash hack/flux.sh) FLOTILLA_SHARED_CRDS=$${FLOTILLA_SHARED_CRDS:-$(CURDIR)/../shared/crds} \
		$(GO) test -count=1 -timeout 30m ./...

generate: ## Generate deepcopy code.
	$(GO) tool controller-gen object paths=./api/...

manifests: ## Generate CRDs and RBAC from markers.
	$(GO) tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(GO) tool controller-gen rbac:roleName=flotilla-manager paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

lint: ## golangci-lint v2, built from the module proxy into bin/.
	@bash hack/golangci-lint.sh run ./...

verify: ## Fail when generated files, go.mod or formatting are stale.
	@bash hack/verify.sh
