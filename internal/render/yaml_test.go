package render

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// sameAsSigsYAML checks that toYAML gives sigs.k8s.io/yaml.Marshal's bytes for obj, or fails
// where it fails.
func sameAsSigsYAML(t *testing.T, what string, obj map[string]any) {
	t.Helper()
	want, werr := yaml.Marshal(obj)
	got, gerr := toYAML(obj)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: error %v; sigs.k8s.io/yaml: %v", what, gerr, werr)
	}
	if string(got) != string(want) {
		t.Fatalf("%s:\ngot:\n%s\nsigs.k8s.io/yaml:\n%s", what, got, want)
	}
}

// awkward are strings YAML reads as something else unless quoted, or must escape.
var awkward = []string{
	"", " ", "x", "yes", "No", "on", "OFF", "y", "n", "true", "False", "null", "~", "Null", "NULL",
	"1", "-1", "01", "0x1F", "1e3", "1.5", ".5", "1_000", "0o17", "+1", ".inf", "-.Inf", ".nan",
	"2026-12-01", "12:30", "1:2:3", "a: b", "a:b", "- x", "-", "--- x", "...", "#x", "x #y", "'q'",
	`"dq"`, "&a", "*a", "!tag", "%x", "@x", "`x", "|", ">", "{a: 1}", "[1]", ",", "?", "? x",
	"a\nb", "a\n", "\n", "a\tb", " lead", "trail ", "a\r\nb", "\x00", "\x01", "\x7f", "\u0085",
	"\u00a0", "\u2028", "\ufeff", "\ufffd", "\uffff", "\U0001F600", "ünïcödé", "<>&", "\xff", "a\xc3",
	strings.Repeat("long ", 40), strings.Repeat("x", 200) + "\n" + strings.Repeat("y", 200),
}

// TestToYAMLIsSigsYAML: the render's YAML is sigs.k8s.io/yaml's, byte for byte, for awkward
// strings as values and keys, numbers of every kind, typed values, nil and empty containers,
// random nested objects, and every object the golden files hold (read back, so their numbers
// are floats).
func TestToYAMLIsSigsYAML(t *testing.T) {
	for _, s := range awkward {
		sameAsSigsYAML(t, "value "+strings.ReplaceAll(s, "\n", `\n`), map[string]any{"k": s, "l": []any{s}})
		sameAsSigsYAML(t, "key "+strings.ReplaceAll(s, "\n", `\n`), map[string]any{s: "v"})
	}
	scalars := []any{
		nil, true, false, 0, 1, -1, math.MaxInt64, math.MinInt64, int64(1) << 53, int32(7),
		0.0, 1.0, 1.5, -0.25, 1e21, 1e-7, 123456789.125, math.MaxFloat64, float32(0.1), uint(3), uint64(math.MaxUint64),
		[]string{"a", "b"}, []string{}, []string(nil), map[string]string{"a": "yes"}, map[string]string(nil),
		[]any{}, []any(nil), map[string]any{}, map[string]any(nil), []byte("bytes"),
		struct {
			A string `json:"a"`
			B int    `json:"b,omitempty"`
		}{A: "x"},
		map[string]any{"nested": []any{map[string]any{"a": 1}, []any{}, nil}},
	}
	for i, v := range scalars {
		sameAsSigsYAML(t, "scalar "+string(rune('a'+i)), map[string]any{"v": v, "list": []any{v, v}})
	}
	sameAsSigsYAML(t, "NaN", map[string]any{"v": math.NaN()}) // both refuse it

	// Keys with digits are left out of the random maps: go-yaml orders such keys by a comparison
	// that is not transitive ("01", "0x1F", "1_000"), so sigs.k8s.io/yaml itself writes them in an
	// order that changes from call to call.
	var keys []string
	for _, s := range awkward {
		if !strings.ContainsAny(s, "0123456789") {
			keys = append(keys, s)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(9); {
		case n < 3 || depth > 4:
			return awkward[rng.IntN(len(awkward))]
		case n == 3:
			return rng.IntN(2000) - 1000
		case n == 4:
			return rng.IntN(2) == 0
		case n == 5:
			return nil
		case n == 6:
			l := make([]any, rng.IntN(4))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		default:
			m := map[string]any{}
			for range rng.IntN(5) {
				m[keys[rng.IntN(len(keys))]] = gen(depth + 1)
			}
			return m
		}
	}
	for i := range 2000 {
		sameAsSigsYAML(t, "random object "+string(rune('0'+i%10)), map[string]any{"root": gen(0)})
	}

	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v, %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(b), "\n---\n") {
			var obj map[string]any
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil || obj == nil {
				continue // not one object (a file of several packages, or an empty one)
			}
			sameAsSigsYAML(t, f+" document "+string(rune('0'+i%10)), obj)
		}
	}
}

// BenchmarkDeployedPackages renders a cluster with 10 pins (the bench's 1,000 × 10 per cluster).
func BenchmarkDeployedPackages(b *testing.B) {
	for _, engine := range []v1alpha1.SyncEngine{v1alpha1.EngineConfigSync, v1alpha1.EngineArgoCD, v1alpha1.EngineFlux} {
		b.Run(string(engine), func(b *testing.B) {
			c := cluster(func(c *v1alpha1.WorkloadCluster) { c.Spec.Sync.Engine = engine })
			var pins []Pin
			for i := range 10 {
				pins = append(pins, pin("app-"+string(rune('a'+i)), "pkg-"+string(rune('a'+i)), i+1, nil))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DeployedPackages(c, pins); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
