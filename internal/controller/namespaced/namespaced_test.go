package namespaced_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/flotilla-dev/flotilla/internal/controller/namespaced"
	"github.com/flotilla-dev/flotilla/internal/scheme"
)

var k8s client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`"))
		return 1
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	if k8s, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	// Three namespaces with a Secret and a ConfigMap each; a and b are watched, c is not.
	for _, ns := range []string{"a", "b", "c"} {
		for _, o := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "git"}, StringData: map[string]string{"password": "in-" + ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"}},
		} {
			if err := k8s.Create(ctx, o); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
	}
	return m.Run()
}

func TestReaderGet(t *testing.T) {
	r := namespaced.Reader(k8s, k8s, []string{"a", "b"})
	for _, tc := range []struct {
		name string
		key  client.ObjectKey
		obj  client.Object
		want string // the Secret's password, the object's name, or the error
	}{
		{"secret in a watched namespace", client.ObjectKey{Namespace: "a", Name: "git"}, &corev1.Secret{}, "in-a"},
		{"secret in the other watched namespace", client.ObjectKey{Namespace: "b", Name: "git"}, &corev1.Secret{}, "in-b"},
		{"secret elsewhere is not found", client.ObjectKey{Namespace: "c", Name: "git"}, &corev1.Secret{}, `secrets "git" not found`},
		{"configmap elsewhere is not found", client.ObjectKey{Namespace: "c", Name: "values"}, &corev1.ConfigMap{}, `configmaps "values" not found`},
		{"unstructured elsewhere is not found", client.ObjectKey{Namespace: "c", Name: "values"}, unstructuredOf("v1", "ConfigMap"), `configmaps "values" not found`},
		{"unstructured in a watched namespace", client.ObjectKey{Namespace: "a", Name: "values"}, unstructuredOf("v1", "ConfigMap"), "values"},
		{"cluster-scoped objects are read as they are", client.ObjectKey{Name: "c"}, &corev1.Namespace{}, "c"},
		{"a cluster-scoped kind with a namespace in the key", client.ObjectKey{Namespace: "c", Name: "c"}, &corev1.Namespace{}, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := r.Get(context.Background(), tc.key, tc.obj)
			got := ""
			switch {
			case err != nil:
				got = err.Error()
				if !apierrors.IsNotFound(err) {
					t.Errorf("error %v is not a NotFound", err)
				}
			case isSecret(tc.obj):
				got = string(tc.obj.(*corev1.Secret).Data["password"])
			default:
				got = tc.obj.GetName()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReaderList(t *testing.T) {
	r := namespaced.Reader(k8s, k8s, []string{"a", "b"})
	for _, tc := range []struct {
		name string
		list client.ObjectList
		opts []client.ListOption
		want []string // namespace/name of the items
	}{
		{"all namespaces is the watched ones", &corev1.SecretList{}, nil, []string{"a/git", "b/git"}},
		{"a watched namespace", &corev1.ConfigMapList{}, []client.ListOption{client.InNamespace("b")}, []string{"b/values"}},
		{"elsewhere is empty", &corev1.SecretList{}, []client.ListOption{client.InNamespace("c")}, nil},
		{"unstructured across namespaces", unstructuredListOf("v1", "ConfigMapList"), nil, []string{"a/values", "b/values"}},
		{"unstructured elsewhere is empty", unstructuredListOf("v1", "ConfigMapList"), []client.ListOption{client.InNamespace("c")}, nil},
		{"selectors still apply", &corev1.SecretList{}, []client.ListOption{client.MatchingFields{"metadata.name": "none"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.List(context.Background(), tc.list, tc.opts...); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range items(t, tc.list) {
				// kube-root-ca.crt ConfigMaps appear in every namespace: not ours.
				if o.GetName() != "kube-root-ca.crt" {
					got = append(got, o.GetNamespace()+"/"+o.GetName())
				}
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
	// Cluster-scoped lists are not restricted: the Namespaces themselves are all there.
	var nss corev1.NamespaceList
	if err := r.List(context.Background(), &nss); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ns := range nss.Items {
		names = append(names, ns.Name)
	}
	for _, want := range []string{"a", "b", "c"} {
		if !slices.Contains(names, want) {
			t.Errorf("namespace %s missing from the list %v", want, names)
		}
	}
}

func TestNoNamespacesReadsEverything(t *testing.T) {
	r := namespaced.Reader(k8s, k8s, nil)
	var s corev1.Secret
	if err := r.Get(context.Background(), client.ObjectKey{Namespace: "c", Name: "git"}, &s); err != nil {
		t.Fatalf("without --watch-namespaces every namespace is read: %v", err)
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{in: nil, want: nil},
		{in: []string{"b", "a", "b"}, want: []string{"a", "b"}},
		{in: []string{" team-a "}, want: []string{"team-a"}},
		{in: []string{"a", ""}, err: "an empty namespace name"},
		{in: []string{"Team_A"}, err: `namespace "Team_A": a lowercase RFC 1123 label`},
	} {
		got, err := namespaced.Parse(tc.in)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("Parse(%q): error %v, want one starting %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestCache(t *testing.T) {
	opts := namespaced.Cache(cache.Options{}, []string{"a", "b"})
	if diff := cmp.Diff([]string{"a", "b"}, slices.Sorted(maps.Keys(opts.DefaultNamespaces))); diff != "" {
		t.Errorf("DefaultNamespaces (-want +got):\n%s", diff)
	}
	if opts := namespaced.Cache(cache.Options{}, nil); opts.DefaultNamespaces != nil {
		t.Errorf("without namespaces the cache watches all of them, got %v", opts.DefaultNamespaces)
	}
}

func unstructuredOf(apiVersion, kind string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func unstructuredListOf(apiVersion, kind string) *unstructured.UnstructuredList {
	u := &unstructured.UnstructuredList{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u
}

func isSecret(o client.Object) bool {
	_, ok := o.(*corev1.Secret)
	return ok
}

func items(t *testing.T, list client.ObjectList) []client.Object {
	t.Helper()
	var out []client.Object
	switch l := list.(type) {
	case *corev1.SecretList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *corev1.ConfigMapList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	default:
		t.Fatalf("unexpected list %T", list)
	}
	return out
}
