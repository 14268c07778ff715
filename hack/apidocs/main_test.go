package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const root = "../.."

func TestAPIReferenceIsUpToDate(t *testing.T) {
	want, err := generate(filepath.Join(root, "api", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "api-reference.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("docs/api-reference.md is stale: run `make generate-docs`")
	}
}

var (
	fence    = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	link     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// TestDocLinks checks that every relative link in the repository's Markdown files (README.md,
// docs/, examples/, ...) names an existing file, and an existing heading when it has an anchor.
func TestDocLinks(t *testing.T) {
	files := markdownFiles(t)
	if len(files) < 5 {
		t.Fatalf("found only %d Markdown files under %s", len(files), root)
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := codeSpan.ReplaceAllString(fence.ReplaceAllString(string(b), ""), "")
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			path, anchor, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			}
			info, err := os.Stat(dest)
			if err != nil {
				t.Errorf("%s: link %q: %s does not exist", rel(file), target, rel(dest))
				continue
			}
			if anchor == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(dest, ".md") {
				t.Errorf("%s: link %q: an anchor into something that is not a Markdown file", rel(file), target)
				continue
			}
			if !anchors(t, dest)[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", rel(file), target, rel(dest), anchor)
			}
		}
	}
	t.Logf("%d relative links in %d Markdown files", checked, len(files))
}

func markdownFiles(t *testing.T) []string {
	t.Helper()
	skip := map[string]bool{".git": true, "bin": true, "tmp": true, ".cache": true, "testdata": true}
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skip[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// anchors are the heading anchors GitHub makes for a Markdown file (duplicates get -1, -2, ...).
func anchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(fence.ReplaceAllString(string(b), ""), "\n") {
		h, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		h = strings.TrimSpace(strings.TrimLeft(h, "#"))
		s := slug(strings.NewReplacer("`", "", "*", "").Replace(h))
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func rel(p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

var (
	reasonLine    = regexp.MustCompile(`conditions\.(Ready|Progressing|Stalled|Set)\(|stalled\(|Reason[A-Za-z]*:? *=? *"|reason = "|return "[A-Z][A-Za-z]+", (true|false)`)
	reasonLiteral = regexp.MustCompile(`"([A-Z][a-z]+(?:[A-Z][a-z]+)*)"`)
)

// TestTroubleshootingCoversReasons checks that docs/troubleshooting.md explains every condition
// reason the controllers, the git errors and the health evaluators can set.
func TestTroubleshootingCoversReasons(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, dir := range []string{"internal/controller", "internal/gitremote", "internal/health"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	reasons := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !reasonLine.MatchString(line) {
				continue
			}
			if m := reasonLiteral.FindStringSubmatch(line); m != nil {
				reasons[m[1]] = rel(f)
			}
		}
	}
	if len(reasons) < 20 {
		t.Fatalf("found only %d reasons: the patterns no longer match the code", len(reasons))
	}
	for r, f := range reasons {
		if !strings.Contains(string(doc), "`"+r+"`") {
			t.Errorf("reason %s (%s) is not in docs/troubleshooting.md", r, f)
		}
	}
}
