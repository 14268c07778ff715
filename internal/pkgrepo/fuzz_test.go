package pkgrepo

import (
	"path"
	"strings"
	"testing"
)

// FuzzCleanPackage: an accepted package path never escapes the repository: it is relative, clean,
// has no "."/".."/".git" segment, and makes a valid tag.
func FuzzCleanPackage(f *testing.F) {
	for _, seed := range []string{"free5gc-upf", "/clusters/edge01/deployed-packages/", "../etc", "a/./b", "a//b", ".git/x", "a/.git", "v1~", "a b", "..", "é/ü"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pkg string) {
		p, err := cleanPackage(pkg)
		if err != nil {
			return
		}
		if strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.HasPrefix(path.Clean("/"+p)+"/", "/../") {
			t.Fatalf("cleanPackage(%q) = %q escapes", pkg, p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || seg == "." || seg == ".." || seg == ".git" {
				t.Fatalf("cleanPackage(%q) = %q has segment %q", pkg, p, seg)
			}
		}
	})
}

// FuzzValidateFiles: accepted package files stay inside the package.
func FuzzValidateFiles(f *testing.F) {
	for _, seed := range []string{"deployment.yaml", "sub/dir/x.yaml", "../x", "/abs", "a/../../b", ".git/config", "a//b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		files := map[string][]byte{"Kptfile": []byte("kind: Kptfile\n"), name: []byte("x")}
		if err := validateFiles(files); err != nil {
			return
		}
		if clean := path.Clean("/" + name); strings.HasPrefix(clean+"/", "/../") || name != strings.TrimPrefix(clean, "/") {
			t.Fatalf("validateFiles accepted %q", name)
		}
	})
}
