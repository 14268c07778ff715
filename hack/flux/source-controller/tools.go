//go:build tools

// Package tools pins Flux source-controller.
package tools

import _ "github.com/fluxcd/source-controller"
