package specialize

// Layer is one source of values in a Hiera-like hierarchy. Layers are given
// in priority order: a later layer overrides the keys of the earlier ones.
type Layer struct {
	// Source says where the values came from (for example
	// "configmap upf-defaults" or "inline"); MergeValues reports it per key
	// so `flotilla render --explain` can tell users which layer won.
	Source string
	Values map[string]string
}

// MergeValues merges layers, later layers winning, and returns the merged
// values together with the Source of the layer that set each key. Both maps
// are non-nil so callers can index them without checks. An empty value is a
// value: a later layer can set a key to "" on purpose.
func MergeValues(layers []Layer) (values map[string]string, origin map[string]string) {
	values = map[string]string{}
	origin = map[string]string{}
	for _, l := range layers {
		for k, v := range l.Values {
			values[k] = v
			origin[k] = l.Source
		}
	}
	return values, origin
}
