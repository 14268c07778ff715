//go:build tools

// Package tools pins Flux kustomize-controller.
package tools

import _ "github.com/fluxcd/kustomize-controller"
