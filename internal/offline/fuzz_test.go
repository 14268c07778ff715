package offline

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/crdvalidate"
)

// FuzzLoadDocument: any YAML document is loaded or refused with an error, never a panic.
func FuzzLoadDocument(f *testing.F) {
	f.Add([]byte("apiVersion: flotilla.dev/v1alpha1\nkind: Repository\nmetadata: {name: r}\nspec: {git: {url: file:///x}}\n"))
	f.Add([]byte("apiVersion: flotilla.dev/v1alpha1\nkind: PackageSet\nspec: {targets: {matrix: [{}, {}]}}\n"))
	f.Add([]byte("kind: [\n"))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nstringData: {password: x}\n"))
	validator, err := crdvalidate.New()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		fl := newFleet()
		fl.validator, fl.seen = validator, map[string]string{}
		_ = fl.add("fuzz.yaml", doc)
	})
}
