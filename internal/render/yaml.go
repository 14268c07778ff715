package render

import (
	"encoding/json"

	goyaml "go.yaml.in/yaml/v2"
)

// toYAML encodes obj exactly as sigs.k8s.io/yaml.Marshal does (JSON, then the JSON read back by
// go-yaml and written out again), without the JSON text: go-yaml is handed the values its parser
// would have made of the JSON. The plain values the render builds (maps of string keys, lists,
// valid UTF-8 strings, booleans, integers, nil) are carried over as they are; any other value
// (a float, a typed struct or slice, a string with characters go-yaml escapes) takes the JSON round trip, so
// the bytes are the same either way (TestToYAMLIsSigsYAML). Parsing the JSON was half of a
// render.
func toYAML(obj map[string]any) ([]byte, error) {
	v, err := yamlValue(obj)
	if err != nil {
		return nil, err
	}
	return goyaml.Marshal(v)
}

// yamlValue is the value go-yaml's parser makes of v's JSON.
func yamlValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool, int, int64, int32:
		return v, nil
	case string:
		if plain(v) {
			return v, nil
		}
	case map[string]any:
		if v == nil {
			return nil, nil // JSON null
		}
		out := make(map[any]any, len(v))
		for k, e := range v {
			if !plain(k) {
				return jsonRoundTrip(v)
			}
			y, err := yamlValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []any:
		if v == nil {
			return nil, nil // JSON null
		}
		out := make([]any, len(v))
		for i, e := range v {
			y, err := yamlValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	}
	return jsonRoundTrip(v)
}

// plain reports whether s is valid UTF-8 made only of characters go-yaml reads back as they are
// (tab, newline and the printable ones): anything else is left to the JSON round trip, which escapes
// or refuses it as sigs.k8s.io/yaml does.
func plain(s string) bool {
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n', r >= 0x20 && r < 0x7f:
		case r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r < 0xfffd && r != 0xfeff, r >= 0x10000 && r <= 0x10ffff:
		default: // control characters, NEL (a line break to YAML 1.1), U+FFFD (also what invalid UTF-8 decodes to)
			return false
		}
	}
	return true
}

// jsonRoundTrip is sigs.k8s.io/yaml's way for one value: its JSON, read by go-yaml.
func jsonRoundTrip(v any) (any, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := goyaml.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	return out, nil
}
