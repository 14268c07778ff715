// Package bootstrap applies a cluster's root sync object (the one that makes its GitOps agent
// sync deployed-packages) with server-side apply.
package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/render"
)

// FieldOwner is flotilla's server-side apply field manager.
const FieldOwner = "flotilla"

// Objects renders the root sync objects of cluster, whose deployed-packages lives in repo.
func Objects(cluster *v1alpha1.WorkloadCluster, repo *v1alpha1.Repository, namespace string) ([]byte, error) {
	if repo.Spec.Git == nil {
		return nil, gitremote.NotGit(repo)
	}
	return render.Bootstrap(cluster, render.Source{
		RepoURL:   gitremote.SyncURL(repo),
		Branch:    gitremote.Branch(repo),
		Directory: repo.Spec.Git.Directory,
	}, namespace)
}

// Applied is an object Apply applied, and the resourceVersion the API server answered with.
type Applied struct {
	GVK             schema.GroupVersionKind
	Namespace, Name string
	ResourceVersion string
}

// String is "Kind namespace/name".
func (a Applied) String() string { return fmt.Sprintf("%s %s/%s", a.GVK.Kind, a.Namespace, a.Name) }

// Applier server-side applies one object as fieldManager, taking the fields it sets from any
// other manager, and answers with the object as the API server stored it
// (remotecluster.Client).
type Applier interface {
	Apply(ctx context.Context, obj *unstructured.Unstructured, fieldManager string) (*unstructured.Unstructured, error)
}

// Apply server-side applies every object of a YAML stream with c, taking ownership of the fields
// it sets, and returns what it applied.
func Apply(ctx context.Context, c Applier, stream []byte) ([]Applied, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var applied []Applied
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return applied, nil
		}
		if err != nil {
			return applied, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return applied, err
		}
		if len(u.Object) == 0 {
			continue
		}
		a := Applied{GVK: u.GroupVersionKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
		// The API server's answer carries the applied object's resourceVersion.
		stored, err := c.Apply(ctx, u, FieldOwner)
		if err != nil {
			return applied, fmt.Errorf("apply %s: %w", a, err)
		}
		a.ResourceVersion = stored.GetResourceVersion()
		applied = append(applied, a)
	}
}
