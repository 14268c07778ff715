package packageset

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ParseKinds parses the kinds objects generators may read (--objects-generator-kinds), each written
// Kind.group as kubectl writes a kind with its group: WorkloadCluster.infra.nephio.org, or the
// Kind alone for the core group. The version is left out: a set may name any version the API
// server serves, and each kind is watched once, at its preferred version.
func ParseKinds(entries []string) ([]schema.GroupKind, error) {
	var out []schema.GroupKind
	for _, e := range entries {
		gk := schema.ParseGroupKind(strings.TrimSpace(e))
		first, _, _ := strings.Cut(gk.Group, ".")
		switch {
		case gk.Kind == "":
			return nil, fmt.Errorf("%q: want Kind.group, e.g. WorkloadCluster.infra.nephio.org", e)
		case !unicode.IsUpper(rune(gk.Kind[0])):
			return nil, fmt.Errorf("%q: write the kind as objects do (WorkloadCluster, not workloadclusters)", e)
		case version.MatchString(first):
			return nil, fmt.Errorf("%q: leave the version out (Kind.group): every served version of the kind is allowed", e)
		}
		if !slices.Contains(out, gk) {
			out = append(out, gk)
		}
	}
	return out, nil
}

// version matches a Kubernetes API version such as v1 or v1beta2.
var version = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// kindNotAllowedError refuses an objects generator over a kind the operator has not allowed.
type kindNotAllowedError struct {
	kind    schema.GroupKind
	allowed []schema.GroupKind
}

func (e *kindNotAllowedError) Error() string {
	allowed := "none"
	if len(e.allowed) > 0 {
		names := make([]string, len(e.allowed))
		for i, gk := range e.allowed {
			names[i] = gk.String()
		}
		allowed = strings.Join(names, ", ")
	}
	return fmt.Sprintf("the objects generator reads %s, a kind this controller does not watch for PackageSets: "+
		"an operator who allows it adds %s to the controller's --objects-generator-kinds flag (allowed now: %s)", e.kind, e.kind, allowed)
}

// checkKinds refuses the set when one of its objects generators names a kind not in the
// allowlist, before anything is read or watched for it.
func (r *Reconciler) checkKinds(gvks []schema.GroupVersionKind) error {
	for _, gvk := range gvks {
		if !slices.Contains(r.ObjectKinds, gvk.GroupKind()) {
			return &kindNotAllowedError{kind: gvk.GroupKind(), allowed: r.ObjectKinds}
		}
	}
	return nil
}

func isKindNotAllowed(err error) bool {
	var e *kindNotAllowedError
	return errors.As(err, &e)
}

// isKindNotServed reports an objects generator over a kind (or version) the API server does not
// serve, perhaps not yet: its CRD may be installed later.
func isKindNotServed(err error) bool { return meta.IsNoMatchError(err) }
