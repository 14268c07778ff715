// Package crd embeds flotilla's CustomResourceDefinitions (config/crd/bases, generated from
// api/v1alpha1 by `make manifests`), so the CLI validates objects offline against exactly the
// schema the API server serves.
package crd

import "embed"

// Bases holds bases/*.yaml.
//
//go:embed bases/*.yaml
var Bases embed.FS
