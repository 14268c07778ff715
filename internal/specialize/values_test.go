package specialize

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Layers of the test fleet: defaults < environment < region < cluster.
var (
	upfDefaults = Layer{Source: "configmap upf-defaults", Values: map[string]string{
		"namespace": "free5gc", "replicas": "1", "tag": "v3.4.0", "cpu": "1", "args": "[--log-level=info]",
	}}
	upfEnvDev    = Layer{Source: "configmap upf-env-dev", Values: map[string]string{"args": "[--log-level=debug, --pprof]"}}
	upfEnvProd   = Layer{Source: "configmap upf-env-prod", Values: map[string]string{"replicas": "3", "cpu": "2", "namespace": "free5gc-prod"}}
	upfRegionUSW = Layer{Source: "configmap upf-region-us-west", Values: map[string]string{"tag": "v3.4.1"}}
)

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name       string
		layers     []Layer
		wantValues map[string]string
		wantOrigin map[string]string
	}{{
		name:       "no layers",
		wantValues: map[string]string{},
		wantOrigin: map[string]string{},
	}, {
		name:   "edge01: dev in us-west",
		layers: []Layer{upfDefaults, upfEnvDev, upfRegionUSW},
		wantValues: map[string]string{
			"namespace": "free5gc", "replicas": "1", "tag": "v3.4.1", "cpu": "1", "args": "[--log-level=debug, --pprof]",
		},
		wantOrigin: map[string]string{
			"namespace": "configmap upf-defaults", "replicas": "configmap upf-defaults", "cpu": "configmap upf-defaults",
			"tag": "configmap upf-region-us-west", "args": "configmap upf-env-dev",
		},
	}, {
		name:   "edge03: prod in us-west with an inline override",
		layers: []Layer{upfDefaults, upfEnvProd, upfRegionUSW, {Source: "inline", Values: map[string]string{"replicas": "5"}}},
		wantValues: map[string]string{
			"namespace": "free5gc-prod", "replicas": "5", "tag": "v3.4.1", "cpu": "2", "args": "[--log-level=info]",
		},
		wantOrigin: map[string]string{
			"namespace": "configmap upf-env-prod", "replicas": "inline", "cpu": "configmap upf-env-prod",
			"tag": "configmap upf-region-us-west", "args": "configmap upf-defaults",
		},
	}, {
		name: "a later empty value still wins",
		layers: []Layer{
			{Source: "a", Values: map[string]string{"x": "1"}},
			{Source: "b", Values: map[string]string{"x": ""}},
		},
		wantValues: map[string]string{"x": ""},
		wantOrigin: map[string]string{"x": "b"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, origin := MergeValues(tt.layers)
			if diff := cmp.Diff(tt.wantValues, values); diff != "" {
				t.Errorf("values (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOrigin, origin); diff != "" {
				t.Errorf("origin (-want +got):\n%s", diff)
			}
		})
	}
}
