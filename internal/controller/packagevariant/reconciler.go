// Package packagevariant reconciles PackageVariant: it renders the variant's upstream revision
// into its downstream package (through the planning core, setplan.PlanVariant) whenever the
// upstream, the values or the spec change, so a new blueprint revision flows down a chain of
// variants layer by layer, each keeping its direct edits.
package packagevariant

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/conditions"
	"github.com/flotilla-dev/flotilla/internal/controller/enqueue"
	"github.com/flotilla-dev/flotilla/internal/gitremote"
	"github.com/flotilla-dev/flotilla/internal/patch"
	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
	"github.com/flotilla-dev/flotilla/internal/setplan"
	"github.com/flotilla-dev/flotilla/internal/specialize"
)

// Reconciler reconciles PackageVariant objects.
type Reconciler struct {
	Client client.Client
	// APIReader reads Secrets and ConfigMaps without caching them.
	APIReader client.Reader
	Git       setplan.Git
	// Exec says which exec functions variant pipelines may run on the controller.
	Exec specialize.ExecPolicy
}

// recheck is how often a variant is rendered again without an event: a values ConfigMap may have
// changed (ConfigMaps are read past the cache, not watched).
const recheck = 5 * time.Minute

// +kubebuilder:rbac:groups=flotilla.dev,resources=packagevariants,verbs=get;list;watch
// +kubebuilder:rbac:groups=flotilla.dev,resources=packagevariants/status,verbs=patch

// Reconcile publishes the variant's downstream revision for its current upstream.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, err error) {
	pv := &v1alpha1.PackageVariant{}
	if err := r.Client.Get(ctx, req.NamespacedName, pv); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	p := patch.New(r.Client, pv)
	defer func() {
		conditions.ObserveGeneration(pv.Status.Conditions, pv.Generation, &pv.Status.ObservedGeneration)
		if perr := p.Patch(ctx, pv); perr != nil && err == nil {
			err = perr
		}
	}()
	if pv.Spec.Suspend {
		setSuspended(pv)
		return ctrl.Result{}, nil
	}
	if other, err := r.otherWriter(ctx, pv); err != nil || other != nil {
		if other != nil {
			setDownstreamInUse(pv, other)
		}
		return ctrl.Result{}, err
	}
	planner := setplan.Planner{Git: r.Git, Exec: r.Exec}
	plan, err := planner.PlanVariant(ctx, reader{r}, pv)
	if err != nil {
		return ctrl.Result{RequeueAfter: recheck}, setFailed(pv, err)
	}
	pv.Status.Upstream, pv.Status.Downstream, pv.Status.Lineage = plan.Upstream, plan.Downstream, plan.Lineage
	pv.Status.Proposal, pv.Status.ApprovedCommit = plan.Proposal, plan.ApprovedCommit
	setPublished(pv, plan)
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// otherWriter returns the older PackageVariant of the namespace that publishes to the same
// downstream package: one package has one writer (the oldest), the others publish nothing.
func (r *Reconciler) otherWriter(ctx context.Context, pv *v1alpha1.PackageVariant) (*v1alpha1.PackageVariant, error) {
	var list v1alpha1.PackageVariantList
	if err := r.Client.List(ctx, &list, client.InNamespace(pv.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list PackageVariants: %w", err)
	}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == pv.Name || o.Spec.Downstream != pv.Spec.Downstream {
			continue
		}
		if o.CreationTimestamp.Before(&pv.CreationTimestamp) || (o.CreationTimestamp.Equal(&pv.CreationTimestamp) && o.Name < pv.Name) {
			return o, nil
		}
	}
	return nil, nil
}

// SetupWithManager registers the reconciler: a variant is reconciled when it changes, when a
// Repository changes (a new upstream revision, or its downstream repository edited), and when a
// PackageVariant it takes as upstream publishes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PackageVariant{}, builder.WithPredicates(enqueue.NotStatusOnly())).
		Watches(&v1alpha1.Repository{}, handler.EnqueueRequestsFromMapFunc(r.forRepository)).
		Watches(&v1alpha1.PackageVariant{}, handler.EnqueueRequestsFromMapFunc(r.forUpstream)).
		Named("packagevariant").
		Complete(r)
}

// forRepository finds the variants that read from, or publish to, the repository.
func (r *Reconciler) forRepository(ctx context.Context, o client.Object) []reconcile.Request {
	return r.matching(ctx, o.GetNamespace(), func(pv *v1alpha1.PackageVariant) bool {
		up := pv.Spec.Upstream.Repository
		return (up != nil && up.Name == o.GetName()) || pv.Spec.Downstream.Repository.Name == o.GetName()
	})
}

// forUpstream finds the variants that take o as their upstream.
func (r *Reconciler) forUpstream(ctx context.Context, o client.Object) []reconcile.Request {
	return r.matching(ctx, o.GetNamespace(), func(pv *v1alpha1.PackageVariant) bool { return pv.Spec.Upstream.Variant == o.GetName() })
}

func (r *Reconciler) matching(ctx context.Context, namespace string, keep func(*v1alpha1.PackageVariant) bool) []reconcile.Request {
	var list v1alpha1.PackageVariantList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// reader is what the planning core reads, through the API server.
type reader struct{ r *Reconciler }

func (rd reader) Repository(ctx context.Context, namespace, name string) (*v1alpha1.Repository, error) {
	return get(ctx, rd.r.Client, namespace, name, &v1alpha1.Repository{})
}

func (rd reader) Remote(ctx context.Context, repo *v1alpha1.Repository) (pkgrepo.Remote, error) {
	return gitremote.Remote(ctx, rd.r.APIReader, repo)
}

func (rd reader) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return get(ctx, rd.r.APIReader, namespace, name, &corev1.ConfigMap{})
}

func (rd reader) Variant(ctx context.Context, namespace, name string) (*v1alpha1.PackageVariant, error) {
	return get(ctx, rd.r.Client, namespace, name, &v1alpha1.PackageVariant{})
}

// get reads one object, nil when it does not exist.
func get[T client.Object](ctx context.Context, c client.Reader, namespace, name string, obj T) (T, error) {
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		var none T
		return none, nil
	}
	return obj, err
}
