package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// startWatches watches the fleet's WorkloadClusters (whole objects: the tracker reads their
// status) and PackageDeployments and PackageSets (metadata only: generation and metadata are
// enough to classify a write, and cost the API server and the bench far less). It returns once
// the three watches are established, so no event of objects created afterwards is missed.
func startWatches(ctx context.Context, c client.WithWatch, t *tracker, logw io.Writer) error {
	lists := []struct {
		kind string
		list func() client.ObjectList
	}{
		{kindCluster, func() client.ObjectList { return &v1alpha1.WorkloadClusterList{} }},
		{kindDeployment, func() client.ObjectList { return metadataList("PackageDeploymentList") }},
		{kindSet, func() client.ObjectList { return metadataList("PackageSetList") }},
	}
	for _, l := range lists {
		w, err := c.Watch(ctx, l.list(), client.InNamespace(namespace))
		if err != nil {
			return fmt.Errorf("watch %s: %w", l.kind, err)
		}
		go follow(ctx, c, w, l.kind, l.list, t, logw)
	}
	return nil
}

func metadataList(kind string) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(kind))
	return l
}

// follow feeds w's events to t and re-establishes the watch from the last resource version when
// the API server closes it (or from now, with a re-list of ADDED events, when that version is
// too old).
func follow(ctx context.Context, c client.WithWatch, w watch.Interface, kind string, list func() client.ObjectList, t *tracker, logw io.Writer) {
	rv := ""
	for {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rv = "" // typically 410 Gone: restart from now
				continue
			}
			obj, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			rv = obj.GetResourceVersion()
			if ev.Type != watch.Bookmark {
				t.observe(kind, ev.Type, obj)
			}
		}
		w.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			w, err = c.Watch(ctx, list(), client.InNamespace(namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err == nil {
				break
			}
			fmt.Fprintf(logw, "watch %s: %v (retrying)\n", kind, err)
			time.Sleep(time.Second)
		}
	}
}
