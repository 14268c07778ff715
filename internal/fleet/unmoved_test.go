package fleet_test

import (
	"errors"
	"testing"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

func TestUnmoved(t *testing.T) {
	pin := func(repo, dir string, n int, commit string) v1alpha1.ResolvedRevision {
		return v1alpha1.ResolvedRevision{Repository: repo, Directory: dir, Revision: n, Tag: dir[1:] + "/v" + string(rune('0'+n)), Commit: commit}
	}
	v3 := pin("catalog", "/upf", 3, "c3")
	for _, tc := range []struct {
		name     string
		prev     *v1alpha1.ResolvedRevision
		next     v1alpha1.ResolvedRevision
		revision string
		want     error
	}{
		{"first pin", nil, v3, "v3", nil},
		{"same commit", &v3, v3, "v3", nil},
		{"tag moved", &v3, pin("catalog", "/upf", 3, "c3b"), "v3", pkgrepo.ErrTagMoved},
		{"tag moved under latest", &v3, pin("catalog", "/upf", 3, "c3b"), "latest", pkgrepo.ErrTagMoved},
		{"latest goes back", &v3, pin("catalog", "/upf", 2, "c2"), "latest", pkgrepo.ErrRevisionNotFound},
		{"latest goes forward", &v3, pin("catalog", "/upf", 4, "c4"), "latest", nil},
		{"a person chose an older revision", &v3, pin("catalog", "/upf", 2, "c2"), "v2", nil},
		{"another repository is a new pin", &v3, pin("mirror", "/upf", 3, "other"), "v3", nil},
		{"another package is a new pin", &v3, pin("catalog", "/smf", 1, "c1"), "latest", nil},
		{"a published pin has no commit to compare", ptr(pin("catalog", "/upf", 3, "")), pin("catalog", "/upf", 3, "c3"), "v3", nil},
		{"latest goes back from a published pin", ptr(pin("catalog", "/upf", 3, "")), pin("catalog", "/upf", 2, "c2"), "latest", pkgrepo.ErrRevisionNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fleet.Unmoved(tc.prev, tc.next, tc.revision)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Unmoved = %v; want %v", err, tc.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
