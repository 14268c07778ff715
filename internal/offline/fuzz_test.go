package offline

import "testing"

// FuzzLoadDocument: any YAML document is loaded or refused with an error, never a panic.
func FuzzLoadDocument(f *testing.F) {
	f.Add([]byte("apiVersion: flotilla.dev/v1alpha1\nkind: Repository\nmetadata: {name: r}\nspec: {git: {url: file:///x}}\n"))
	f.Add([]byte("apiVersion: flotilla.dev/v1alpha1\nkind: PackageSet\nspec: {targets: {matrix: [{}, {}]}}\n"))
	f.Add([]byte("kind: [\n"))
	f.Add([]byte("apiVersion: v1\nkind: Secret\nstringData: {password: x}\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		_ = newFleet().add(doc)
	})
}
