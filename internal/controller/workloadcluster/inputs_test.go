package workloadcluster

import (
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// TestRenderInputs: the key that lets a reconcile skip a render changes with every object the
// render reads (at a new resourceVersion) and every part of a pin, and not with the order in which
// the cache lists the deployments.
func TestRenderInputs(t *testing.T) {
	base := func() (*v1alpha1.WorkloadCluster, *v1alpha1.Repository, []render.Pin) {
		cluster := &v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge01", UID: "c", ResourceVersion: "10"}}
		repo := &v1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "edge01", UID: "r", ResourceVersion: "11"}}
		var pins []render.Pin
		for _, name := range []string{"a", "b", "c"} {
			pd := &v1alpha1.PackageDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("u-" + name), ResourceVersion: "12"}}
			pins = append(pins, render.Pin{Deployment: pd, RepoURL: "https://git.example/catalog.git", Branch: "main",
				Resolved: v1alpha1.ResolvedRevision{Repository: "catalog", Revision: 1, Tag: name + "/v1", Commit: "1111", Directory: "/" + name}})
		}
		return cluster, repo, pins
	}
	// renderInputs names every field of a pin and of its resolved revision: a field added to either
	// must be added there too, or a change to it would not be rendered for up to verifyEvery.
	if n := reflect.TypeFor[render.Pin]().NumField(); n != 6 {
		t.Errorf("render.Pin has %d fields, renderInputs hashes 6: hash the new one and count it here", n)
	}
	if n := reflect.TypeFor[v1alpha1.ResolvedRevision]().NumField(); n != 6 {
		t.Errorf("ResolvedRevision has %d fields, renderInputs hashes 6: hash the new one and count it here", n)
	}

	c, r, p := base()
	want := renderInputs(c, r, p)

	same := map[string]func(*v1alpha1.WorkloadCluster, *v1alpha1.Repository, []render.Pin) []render.Pin{
		"listed in another order": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			slices.Reverse(p)
			return p
		},
		"read again (new objects, same versions)": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			for i := range p {
				p[i].Deployment = p[i].Deployment.DeepCopy()
			}
			return p
		},
	}
	for name, change := range same {
		c, r, p := base()
		p = change(c, r, p)
		if got := renderInputs(c, r, p); got != want {
			t.Errorf("%s: the inputs differ", name)
		}
	}

	differ := map[string]func(*v1alpha1.WorkloadCluster, *v1alpha1.Repository, []render.Pin) []render.Pin{
		"cluster written": func(c *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			c.ResourceVersion = "20"
			return p
		},
		"cluster recreated": func(c *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			c.UID = "c2"
			return p
		},
		"repository written": func(_ *v1alpha1.WorkloadCluster, r *v1alpha1.Repository, p []render.Pin) []render.Pin {
			r.ResourceVersion = "21"
			return p
		},
		"another repository": func(_ *v1alpha1.WorkloadCluster, r *v1alpha1.Repository, p []render.Pin) []render.Pin {
			r.Name = "other"
			return p
		},
		"deployment written": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[1].Deployment.ResourceVersion = "22"
			return p
		},
		"deployment recreated": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[1].Deployment.UID = "u-b2"
			return p
		},
		"resolved to another tag": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Tag = "a/v2"
			return p
		},
		"resolved to a new commit": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Commit = "2222"
			return p
		},
		"resolved revision": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Revision = 2
			return p
		},
		"resolved directory": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Directory = "/x"
			return p
		},
		"resolved image": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Image = "reg/x"
			return p
		},
		"resolved repository": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[0].Resolved.Repository = "c2"
			return p
		},
		"repository URL": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[2].RepoURL = "https://x"
			return p
		},
		"branch": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[2].Branch = "dev"
			return p
		},
		"insecure": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[2].Insecure = true
			return p
		},
		"draining": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			p[2].Drain = true
			return p
		},
		"a pin less": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin { return p[1:] },
		"no pins":    func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, _ []render.Pin) []render.Pin { return nil },
		"a pin twice": func(_ *v1alpha1.WorkloadCluster, _ *v1alpha1.Repository, p []render.Pin) []render.Pin {
			return append(p, p[0])
		},
	}
	seen := map[[32]byte]string{}
	for name, change := range differ {
		c, r, p := base()
		got := renderInputs(c, r, change(c, r, p))
		if got == want {
			t.Errorf("%s: the inputs are the same", name)
		}
		if other, ok := seen[got]; ok {
			t.Errorf("%s and %s: the same inputs", name, other)
		}
		seen[got] = name
	}
}
