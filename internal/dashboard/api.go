package dashboard

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/fleetstatus"
)

// Paging of the fleet matrix: the page asks for one page of rows, filtered on the server, so a
// fleet of thousands of clusters costs the browser one page.
const (
	defaultLimit = 50
	maxLimit     = 500
	// maxListed bounds the clusters a package's revision lists by name (its count covers all).
	maxListed = 100
)

// FleetPage is one page of the fleet matrix: clusters × packages.
type FleetPage struct {
	Namespaces []string `json:"namespaces"` // every namespace of the fleet, for the filter
	Packages   []string `json:"packages"`   // the columns: packages deployed to the matching clusters
	Total      int      `json:"total"`      // clusters matching the filters
	Offset     int      `json:"offset"`
	Limit      int      `json:"limit"`
	// Counts are the clusters matching every filter but health, by their health.
	Counts map[fleetstatus.Health]int `json:"counts"`
	Rows   []Row                      `json:"rows"`
}

// Row is one cluster of the matrix.
type Row struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	Labels    map[string]string  `json:"labels,omitempty"`
	Status    fleetstatus.Status `json:"status"`
	Published string             `json:"published,omitempty"` // the deployed-packages tag
	Proposal  int                `json:"proposal,omitempty"`  // the proposed revision waiting
	// Cells are the cluster's deployments by package (usually one each).
	Cells map[string][]Cell `json:"cells"`
}

// Cell is one deployment in the matrix.
type Cell struct {
	Deployment string             `json:"deployment"`
	Pinned     string             `json:"pinned"`
	Tag        string             `json:"tag,omitempty"`
	Published  string             `json:"published"`
	Status     fleetstatus.Status `json:"status"`
}

// fleetPage answers /api/fleet?namespace=&selector=&health=&q=&offset=&limit=.
func fleetPage(r *http.Request, f fleetstatus.Fleet) (any, error) {
	q := r.URL.Query()
	sel, err := labels.Parse(q.Get("selector"))
	if err != nil {
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("label selector %q: %v", q.Get("selector"), err)}
	}
	health := fleetstatus.Health(q.Get("health"))
	if health != "" && !slices.Contains(fleetstatus.Healths, health) {
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("health %q: one of %v", health, fleetstatus.Healths)}
	}
	offset, limit := number(q.Get("offset"), 0), number(q.Get("limit"), defaultLimit)
	limit = min(max(limit, 1), maxLimit)
	ns, search := q.Get("namespace"), strings.ToLower(strings.TrimSpace(q.Get("q")))
	page := FleetPage{Namespaces: []string{}, Packages: []string{}, Counts: map[fleetstatus.Health]int{}, Rows: []Row{}, Limit: limit}
	packages := map[string]bool{}
	var match []*fleetstatus.Cluster
	for i := range f.Clusters {
		c := &f.Clusters[i]
		if len(page.Namespaces) == 0 || page.Namespaces[len(page.Namespaces)-1] != c.Namespace {
			page.Namespaces = append(page.Namespaces, c.Namespace) // clusters come sorted by namespace
		}
		if (ns != "" && c.Namespace != ns) || !sel.Matches(labels.Set(c.Labels)) || (search != "" && !matches(c, search)) {
			continue
		}
		page.Counts[c.Status.Health]++
		if health != "" && c.Status.Health != health {
			continue
		}
		match = append(match, c)
		for _, d := range c.Deployments {
			packages[d.Package] = true
		}
	}
	for p := range packages {
		page.Packages = append(page.Packages, p)
	}
	slices.Sort(page.Packages)
	page.Total = len(match)
	page.Offset = min(max(offset, 0), max(len(match)-1, 0)/limit*limit)
	for _, c := range match[page.Offset:min(page.Offset+limit, len(match))] {
		row := Row{Namespace: c.Namespace, Name: c.Name, Labels: c.Labels, Status: c.Status, Cells: map[string][]Cell{}}
		if c.Published != nil {
			row.Published = c.Published.Tag
		}
		if c.Proposal != nil {
			row.Proposal = c.Proposal.Revision
		}
		for _, d := range c.Deployments {
			cell := Cell{Deployment: d.Name, Pinned: d.Pinned, Published: d.Published, Status: d.Status}
			if d.Resolved != nil {
				cell.Tag = d.Resolved.Tag
			}
			row.Cells[d.Package] = append(row.Cells[d.Package], cell)
		}
		page.Rows = append(page.Rows, row)
	}
	return page, nil
}

// matches reports whether the search text (lower case) is in the cluster's name, namespace,
// labels, or a deployment's name, package or pinned tag.
func matches(c *fleetstatus.Cluster, search string) bool {
	in := func(s string) bool { return strings.Contains(strings.ToLower(s), search) }
	if in(c.Name) || in(c.Namespace) {
		return true
	}
	for k, v := range c.Labels {
		if in(k + "=" + v) {
			return true
		}
	}
	for _, d := range c.Deployments {
		if in(d.Name) || in(d.Package) || (d.Resolved != nil && in(d.Resolved.Tag)) {
			return true
		}
	}
	return false
}

func number(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}

// ClusterPage is one cluster: its deployments, proposal, revisions and problems.
type ClusterPage struct {
	Cluster fleetstatus.Cluster `json:"cluster"`
	// Revisions are the deployed-packages revisions that brought in the pins the cluster carries
	// now, newest first: what status tells. Pins since replaced or removed are in the cluster
	// repository's git history only, which the dashboard does not read.
	Revisions []Revision `json:"revisions"`
	Problems  []Problem  `json:"problems"`
	// Sets are the PackageSets with a deployment on the cluster.
	Sets []string `json:"sets"`
}

// Revision is one deployed-packages revision and the pins it brought in that it still carries.
type Revision struct {
	Revision int    `json:"revision"`
	Tag      string `json:"tag,omitempty"`
	Current  bool   `json:"current,omitempty"`
	Pins     []Pin  `json:"pins"`
}

// Pin is one deployment's pin.
type Pin struct {
	Deployment string `json:"deployment"`
	Tag        string `json:"tag"`
}

// Problem is something on the cluster that needs someone, and where it is said.
type Problem struct {
	Object  string `json:"object"` // kind/name
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

func clusterPage(r *http.Request, f fleetstatus.Fleet) (any, error) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	i := slices.IndexFunc(f.Clusters, func(c fleetstatus.Cluster) bool { return c.Namespace == ns && c.Name == name })
	if i < 0 {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("workloadcluster %s/%s not found", ns, name)}
	}
	c := f.Clusters[i]
	page := ClusterPage{Cluster: c, Revisions: revisions(c), Problems: []Problem{}, Sets: []string{}}
	for _, typ := range []string{v1alpha1.ConditionStalled, v1alpha1.ConditionBootstrapped, v1alpha1.ConditionHealthy, v1alpha1.ConditionFactsRead} {
		cond := meta.FindStatusCondition(c.Conditions, typ)
		bad := cond != nil && (cond.Status == metav1.ConditionTrue) == (typ == v1alpha1.ConditionStalled)
		if bad {
			page.Problems = append(page.Problems, Problem{Object: "WorkloadCluster/" + c.Name, Reason: typ + " " + cond.Reason, Message: cond.Message})
		}
	}
	deployments := map[string]bool{}
	for _, d := range c.Deployments {
		deployments[d.Name] = true
		if d.Status.Health == fleetstatus.Degraded {
			page.Problems = append(page.Problems, Problem{Object: "PackageDeployment/" + d.Name, Reason: d.Status.Reason, Message: d.Status.Message})
		}
		if d.Set != "" && !slices.Contains(page.Sets, d.Set) {
			page.Sets = append(page.Sets, d.Set)
		}
	}
	slices.Sort(page.Sets)
	for _, s := range f.Sets {
		if s.Namespace != c.Namespace {
			continue
		}
		for _, p := range s.Problems {
			if p.Target == c.Name || strings.HasPrefix(p.Target, c.Name+" ") {
				page.Problems = append(page.Problems, Problem{Object: "PackageSet/" + s.Name, Reason: "TargetProblem", Message: p.Message})
			}
		}
		if s.Rollout == nil {
			continue
		}
		for _, t := range s.Rollout.FailedTargets {
			if deployments[t] {
				page.Problems = append(page.Problems, Problem{Object: "PackageSet/" + s.Name, Reason: "RolloutHalted", Message: fmt.Sprintf("%s did not become healthy at %s", t, s.Rollout.Revision)})
			}
		}
		for _, b := range s.Rollout.RolledBack {
			if deployments[b.Target] {
				page.Problems = append(page.Problems, Problem{Object: "PackageSet/" + s.Name, Reason: "RolledBack", Message: fmt.Sprintf("%s rolled back from %s to %s", b.Target, b.From, b.To)})
			}
		}
	}
	return page, nil
}

// revisions groups the pins of the cluster's published deployed-packages by the revision that
// first carried them (status.deployedPackagesRevision of each deployment: a deployment waiting
// for a new pin keeps the revision of the pin still published), newest first.
func revisions(c fleetstatus.Cluster) []Revision {
	if c.Published == nil {
		return []Revision{}
	}
	base, _ := fleet.SplitTag(c.Published.Tag)
	current := c.Published.Revision
	first := map[string]int{}
	for _, d := range c.Deployments {
		first[d.Name] = d.DeployedPackagesRevision
	}
	by := map[int]*Revision{current: {Revision: current, Tag: c.Published.Tag, Current: true, Pins: []Pin{}}}
	for _, p := range c.Published.Packages {
		n := first[p.Deployment]
		if n <= 0 || n > current {
			n = current // not reported: the current revision carries it, at least
		}
		if by[n] == nil {
			by[n] = &Revision{Revision: n, Pins: []Pin{}}
			if base != "" {
				by[n].Tag = base + "v" + strconv.Itoa(n)
			}
		}
		by[n].Pins = append(by[n].Pins, Pin{Deployment: p.Deployment, Tag: p.Tag})
	}
	out := make([]Revision, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Revision) int { return cmp.Compare(b.Revision, a.Revision) })
	return out
}

// SetsPage is every PackageSet with its rollout.
type SetsPage struct {
	Sets []fleetstatus.Set `json:"sets"`
}

func setsPage(r *http.Request, f fleetstatus.Fleet) (any, error) {
	ns := r.URL.Query().Get("namespace")
	page := SetsPage{Sets: []fleetstatus.Set{}}
	for _, s := range f.Sets {
		if ns == "" || s.Namespace == ns {
			page.Sets = append(page.Sets, s)
		}
	}
	return page, nil
}

// PackageSummary is one package across the fleet.
type PackageSummary struct {
	Name      string                     `json:"name"`
	Clusters  int                        `json:"clusters"`
	Revisions []string                   `json:"revisions"` // newest first
	Counts    map[fleetstatus.Health]int `json:"counts"`
}

// PackagesPage lists the packages deployed.
type PackagesPage struct {
	Packages []PackageSummary `json:"packages"`
}

func packagesPage(r *http.Request, f fleetstatus.Fleet) (any, error) {
	ns := r.URL.Query().Get("namespace")
	by := map[string]*PackageSummary{}
	seen := map[string]map[string]bool{} // package → revisions
	clusters := map[string]map[string]bool{}
	for _, d := range deployments(f, ns) {
		p := by[d.Package]
		if p == nil {
			p = &PackageSummary{Name: d.Package, Counts: map[fleetstatus.Health]int{}, Revisions: []string{}}
			by[d.Package], seen[d.Package], clusters[d.Package] = p, map[string]bool{}, map[string]bool{}
		}
		p.Counts[d.Status.Health]++
		if rev := revisionOf(d); !seen[d.Package][rev] {
			seen[d.Package][rev] = true
			p.Revisions = append(p.Revisions, rev)
		}
		clusters[d.Package][d.Namespace+"/"+d.Cluster] = true
	}
	page := PackagesPage{Packages: []PackageSummary{}}
	for name, p := range by {
		p.Clusters = len(clusters[name])
		slices.SortFunc(p.Revisions, newestFirst)
		page.Packages = append(page.Packages, *p)
	}
	slices.SortFunc(page.Packages, func(a, b PackageSummary) int { return cmp.Compare(a.Name, b.Name) })
	return page, nil
}

// PackagePage is one package: which clusters run which revision, and the variants around it.
type PackagePage struct {
	Name string `json:"name"`
	// Spread is the package's revisions, newest first, each with the clusters that run it.
	Spread []Spread `json:"spread"`
	// Variants are the PackageVariants that publish the package, or take it as their upstream
	// or somewhere in their lineage.
	Variants []fleetstatus.Variant `json:"variants"`
	// Sets are the PackageSets that deploy it.
	Sets []fleetstatus.Set `json:"sets"`
}

// Spread is one revision of a package and where it runs.
type Spread struct {
	// Revision is the pinned revision (vN), or, for a set's per-cluster variants, the blueprint
	// revision they were rendered from (Blueprint true).
	Revision  string                     `json:"revision"`
	Blueprint bool                       `json:"blueprint,omitempty"`
	Count     int                        `json:"count"`
	Counts    map[fleetstatus.Health]int `json:"counts"`
	Clusters  []SpreadCluster            `json:"clusters"` // the first maxListed, worst first
}

// SpreadCluster is one deployment of the revision.
type SpreadCluster struct {
	Namespace  string             `json:"namespace"`
	Cluster    string             `json:"cluster"`
	Deployment string             `json:"deployment"`
	Tag        string             `json:"tag,omitempty"`
	Status     fleetstatus.Status `json:"status"`
}

func packagePage(r *http.Request, f fleetstatus.Fleet) (any, error) {
	name, ns := r.PathValue("name"), r.URL.Query().Get("namespace")
	page := PackagePage{Name: name, Spread: []Spread{}, Variants: []fleetstatus.Variant{}, Sets: []fleetstatus.Set{}}
	by := map[string]*Spread{}
	type listed struct {
		rev string
		SpreadCluster
	}
	var all []listed
	for _, d := range deployments(f, ns) {
		if d.Package != name {
			continue
		}
		rev := revisionOf(d)
		s := by[rev]
		if s == nil {
			s = &Spread{Revision: rev, Blueprint: d.Blueprint != "", Counts: map[fleetstatus.Health]int{}, Clusters: []SpreadCluster{}}
			by[rev] = s
		}
		s.Count++
		s.Counts[d.Status.Health]++
		sc := SpreadCluster{Namespace: d.Namespace, Cluster: d.Cluster, Deployment: d.Name, Status: d.Status}
		if d.Resolved != nil {
			sc.Tag = d.Resolved.Tag
		}
		all = append(all, listed{rev, sc})
	}
	// Worst first, so the clusters that need someone are among those listed.
	slices.SortStableFunc(all, func(a, b listed) int {
		switch {
		case a.Status.Health.Worse(b.Status.Health):
			return -1
		case b.Status.Health.Worse(a.Status.Health):
			return 1
		}
		return 0
	})
	for _, l := range all {
		if s := by[l.rev]; len(s.Clusters) < maxListed {
			s.Clusters = append(s.Clusters, l.SpreadCluster)
		}
	}
	for _, s := range by {
		page.Spread = append(page.Spread, *s)
	}
	slices.SortFunc(page.Spread, func(a, b Spread) int { return newestFirst(a.Revision, b.Revision) })
	for _, v := range f.Variants {
		if (ns == "" || v.Namespace == ns) && related(v, name) {
			page.Variants = append(page.Variants, v)
		}
	}
	for _, s := range f.Sets {
		if (ns == "" || s.Namespace == ns) && s.Package == name {
			page.Sets = append(page.Sets, s)
		}
	}
	if len(page.Spread) == 0 && len(page.Variants) == 0 && len(page.Sets) == 0 {
		return nil, &httpError{http.StatusNotFound, fmt.Sprintf("no deployment, variant or set of package %q", name)}
	}
	return page, nil
}

// revisionOf is the revision a deployment counts under in its package's spread: the blueprint
// revision its variant was rendered from, else the revision it pins.
func revisionOf(d fleetstatus.Deployment) string {
	if d.Blueprint != "" {
		return d.Blueprint
	}
	return d.Pinned
}

// related reports whether variant v publishes package name, or takes it as upstream or in its
// lineage.
func related(v fleetstatus.Variant, name string) bool {
	if v.Package == name || strings.HasPrefix(v.Upstream, name+"@") {
		return true
	}
	for _, e := range v.Lineage {
		if base, _ := fleet.SplitTag(e.Tag); base == name+"/" || base == name+":" {
			return true
		}
	}
	return false
}

// newestFirst orders revisions (vN, or tags ending in vN) by N descending, then by name; "-"
// (nothing pinned yet) last.
func newestFirst(a, b string) int {
	na, nb := revNumber(a), revNumber(b)
	return cmp.Or(cmp.Compare(nb, na), cmp.Compare(a, b))
}

func revNumber(s string) int {
	i := strings.LastIndex(s, "v")
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(s[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// deployments are every deployment in namespace ns ("" for all), orphans included.
func deployments(f fleetstatus.Fleet, ns string) []fleetstatus.Deployment {
	var out []fleetstatus.Deployment
	for _, c := range f.Clusters {
		if ns == "" || c.Namespace == ns {
			out = append(out, c.Deployments...)
		}
	}
	for _, d := range f.Orphans {
		if ns == "" || d.Namespace == ns {
			out = append(out, d)
		}
	}
	return out
}
