# flotilla — see README.md.
SHELL := bash
GO ?= go
BIN := $(CURDIR)/bin

# What `flotilla version` prints, the controller logs and the image is tagged with
# (internal/buildinfo): the release tag (git describe; the short commit when there is none,
# -dirty with uncommitted changes), the commit and the commit's date, so builds of one commit are
# the same.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
BUILDINFO := github.com/flotilla-dev/flotilla/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).commit=$(COMMIT) -X $(BUILDINFO).date=$(DATE)

.PHONY: all build image version demo test generate manifests helm generate-docs verify lint vet fmt envtest flux

all: build

build: ## Build bin/flotilla, stamped with VERSION, COMMIT and DATE.
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/flotilla ./cmd/flotilla

version: ## Print VERSION, the version build and image stamp (and the image's tag).
	@echo $(VERSION)

# The image's platform (its binary's GOOS/GOARCH) and the CA certificates it carries.
IMAGE_PLATFORM ?= linux/$(shell $(GO) env GOARCH)
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt

image: ## Build the controller image, no Docker needed: bin/image, an OCI layout tagged VERSION (docs/install.md).
	CGO_ENABLED=0 GOOS=$(word 1,$(subst /, ,$(IMAGE_PLATFORM))) GOARCH=$(word 2,$(subst /, ,$(IMAGE_PLATFORM))) \
		$(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $(BIN)/image-root/flotilla ./cmd/flotilla
	$(GO) run ./hack/image -binary $(BIN)/image-root/flotilla -ca-certs $(CA_CERTS) -platform $(IMAGE_PLATFORM) \
		-version $(VERSION) -revision $(COMMIT) -created $(DATE) -o $(BIN)/image

demo: build ## Run flotilla on an embedded sandbox fleet (no cluster needed).
	$(BIN)/flotilla demo

envtest: ## Build kube-apiserver and etcd from the Go module proxy into bin/k8s (once).
	@bash hack/envtest.sh >/dev/null

flux: ## Build Flux source-controller and kustomize-controller from the Go module proxy into bin/flux (once).
	@bash hack/flux.sh >/dev/null

test: envtest flux ## Run every test: real API server, real git over HTTP, real Flux controllers.
	KUBEBUILDER_ASSETS=$$(bash hack/envtest.sh) FLOTILLA_FLUX_BIN=$$(bash hack/flux.sh) FLOTILLA_SHARED_CRDS=$${FLOTILLA_SHARED_CRDS:-$(CURDIR)/../shared/crds} \
		$(GO) test -count=1 -timeout 30m ./...
	cd test/install && KUBEBUILDER_ASSETS=$$(bash ../../hack/envtest.sh) $(GO) test -count=1 -timeout 20m ./...

# A count (Nx), not a duration: Go 1.26's fuzz coordinator can fail a clean run with "context deadline
# exceeded" when a duration's deadline races a worker's last call (go.dev/issue/75804, fixed in 1.27).
# A count has no deadline to race. FUZZTIME=10m still works for a long run by hand.
FUZZTIME ?= 20000x
fuzz: ## Run every fuzz test for FUZZTIME inputs each (seeds under testdata/fuzz are replayed by make test).
	@for t in $$(grep -rhoE '^func Fuzz[A-Za-z0-9]+' --include='*_test.go' internal | sed 's/func //' | sort -u); do \
		pkg=$$(grep -rlE "^func $$t\(" --include='*_test.go' internal | xargs -n1 dirname | head -1); \
		echo "fuzz $$t in ./$$pkg for $(FUZZTIME)"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; \
	done

BENCH_FLAGS ?=
bench: build envtest ## Measure the controller on a synthetic fleet (flags: BENCH_FLAGS="--clusters 1000 --packages 10").
	KUBEBUILDER_ASSETS=$$(bash hack/envtest.sh) FLOTILLA_SHARED_CRDS=$${FLOTILLA_SHARED_CRDS:-$(CURDIR)/../shared/crds} \
		$(BIN)/flotilla bench $(BENCH_FLAGS)

generate: ## Generate deepcopy code.
	$(GO) tool controller-gen object paths=./api/...

manifests: ## Generate CRDs and RBAC from markers.
	$(GO) tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(GO) tool controller-gen rbac:roleName=flotilla-manager paths=./internal/controller/... output:rbac:artifacts:config=config/rbac

helm: ## Regenerate the Helm chart charts/flotilla from config/default.
	@bash hack/helm-chart.sh

generate-docs: ## Regenerate docs/api-reference.md from api/v1alpha1.
	$(GO) run ./hack/apidocs

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

lint: ## golangci-lint v2, built from the module proxy into bin/.
	@bash hack/golangci-lint.sh run ./...

verify: ## Fail when generated files, go.mod or formatting are stale.
	@bash hack/verify.sh
