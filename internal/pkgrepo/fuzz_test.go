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
			if seg == "" || seg == "." || seg == ".." || isDotGit(seg) {
				t.Fatalf("cleanPackage(%q) = %q has segment %q", pkg, p, seg)
			}
		}
	})
}

// FuzzValidateFiles: accepted package files stay inside the package.
func FuzzValidateFiles(f *testing.F) {
	for _, seed := range []string{"deployment.yaml", "sub/dir/x.yaml", "../x", "/abs", "a/../../b", ".git/config", ".GIT/config", "git~1/x", "a//b"} {
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

// A file or package path naming a checkout's .git directory on some file system is refused: any
// case, trailing dots or spaces, the NTFS short name, HFS+'s ignored code points. Names that only
// begin like it are kept.
func TestDotGitVariantsRefused(t *testing.T) {
	for _, name := range []string{".git/config", ".GIT/hooks/post-checkout", "a/.Git/config", "git~1/config", "GIT~1/x",
		".git./x", ".git /x", ".git. . /x", ".git::$INDEX_ALLOCATION/hooks/x", ".GIT:stream/x", ".g\u200cit/hooks/x", "\ufeff.git/x"} {
		if err := validateFiles(map[string][]byte{"Kptfile": nil, name: nil}); err == nil {
			t.Errorf("validateFiles accepted %q", name)
		}
		if _, err := cleanPackage(name); err == nil {
			t.Errorf("cleanPackage accepted %q", name)
		}
	}
	for _, name := range []string{".github/workflows/ci.yaml", ".gitignore", "git/x", "a.git/x", "git~10/x", ".gitkeep"} {
		if err := validateFiles(map[string][]byte{"Kptfile": nil, name: nil}); err != nil {
			t.Errorf("validateFiles refused %q: %v", name, err)
		}
	}
}
