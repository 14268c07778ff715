package fleetstatus

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/fleet"
	"github.com/flotilla-dev/flotilla/internal/render"
	"github.com/flotilla-dev/flotilla/internal/rollout"
	"github.com/flotilla-dev/flotilla/internal/setplan"
)

// Fleet is the fleet as people read it: what each deployment pins, where it is published and how
// it is doing, each cluster with its deployments, each set with its rollout, each variant with
// its lineage. `flotilla status` prints it as tables and the dashboard serves it as JSON: one
// answer to "which revision does this cluster run, and is it healthy".
type Fleet struct {
	Clusters []Cluster `json:"clusters"` // by namespace, then name
	// Orphans are deployments whose cluster does not exist.
	Orphans  []Deployment `json:"orphans,omitempty"`
	Sets     []Set        `json:"sets"`     // by namespace, then name
	Variants []Variant    `json:"variants"` // by namespace, then name
}

// Cluster is one WorkloadCluster and the deployments on it.
type Cluster struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Engine    string            `json:"engine"`
	Approval  string            `json:"approval"`
	Suspend   bool              `json:"suspend,omitempty"`
	// Status is the worst of the cluster's own and its deployments'; Own is the cluster's alone.
	Status      Status                           `json:"status"`
	Own         Status                           `json:"own"`
	Conditions  []metav1.Condition               `json:"conditions,omitempty"`
	Published   *v1alpha1.DeployedPackagesStatus `json:"deployedPackages,omitempty"`
	Proposal    *Proposal                        `json:"proposal,omitempty"`
	Deployments []Deployment                     `json:"deployments"` // by name
}

// Proposal is a deployed-packages change waiting for approval, with what it changes from the
// published revision.
type Proposal struct {
	Revision int             `json:"revision"`
	Branch   string          `json:"branch"`
	Commit   string          `json:"commit"`
	Summary  string          `json:"summary,omitempty"`
	Changes  []render.Change `json:"changes"`
	// Command approves it.
	Command string `json:"command"`
}

// Deployment is one PackageDeployment: what it asks for, what it pins, where that is published.
type Deployment struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Cluster   string `json:"cluster"`
	// Package is spec.package.name: the fleet matrix's column.
	Package    string `json:"package"`
	Repository string `json:"repository,omitempty"` // "" for the cluster's repository
	Set        string `json:"set,omitempty"`        // the PackageSet that generated it
	Wants      string `json:"wants"`                // spec.package.revision
	// Pinned is the revision it pins ("v6", "-" before one is resolved), Resolved the details.
	Pinned   string                     `json:"pinned"`
	Resolved *v1alpha1.ResolvedRevision `json:"resolved,omitempty"`
	// Published is the deployed-packages revision carrying the pin ("v7"), "proposed v4" while a
	// proposal waits, "no cluster", or "-".
	Published                string `json:"published"`
	DeployedPackagesRevision int    `json:"deployedPackagesRevision,omitempty"`
	// Blueprint is, for a set's variant, the blueprint revision the variant was rendered from.
	Blueprint string `json:"blueprint,omitempty"`
	// Lineage is, when it pins a PackageVariant's output, the chain it runs, nearest first.
	Lineage    []string                      `json:"lineage,omitempty"`
	SyncObject *v1alpha1.SyncObjectReference `json:"syncObject,omitempty"`
	Status     Status                        `json:"status"`
	Conditions []metav1.Condition            `json:"conditions,omitempty"`
}

// Set is one PackageSet and its rollout.
type Set struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Package   string `json:"package"`
	// Revision is what the set asks for: "v6", "v7 ← staging" when promoted from another set.
	Revision   string                    `json:"revision"`
	Strategy   string                    `json:"strategy"`
	Targets    int                       `json:"targets"`
	Updated    int                       `json:"updated"`
	Ready      int                       `json:"ready"`
	Failed     int                       `json:"failed,omitempty"`
	Status     Status                    `json:"status"`
	Conditions []metav1.Condition        `json:"conditions,omitempty"`
	Problems   []v1alpha1.TargetProblem  `json:"problems,omitempty"`
	Promotion  *v1alpha1.PromotionStatus `json:"promotion,omitempty"`
	Rollout    *Rollout                  `json:"rollout,omitempty"`
}

// Rollout is where a set's RollingUpdate stands, step by step.
type Rollout struct {
	Revision      string                      `json:"revision"`
	Step          int                         `json:"step"` // 0-based
	Steps         []Step                      `json:"steps"`
	Paused        bool                        `json:"paused,omitempty"`
	Halted        bool                        `json:"halted,omitempty"`
	Done          bool                        `json:"done,omitempty"`
	Message       string                      `json:"message,omitempty"`
	FailedTargets []string                    `json:"failedTargets,omitempty"`
	RolledBack    []v1alpha1.RolledBackTarget `json:"rolledBack,omitempty"`
	// Undeployed is how many targets have no deployment yet (the rollout has not reached them):
	// the generator's targets are not in the API, so they are in no step.
	Undeployed int `json:"undeployed,omitempty"`
	// Commands are what a person runs next: resume a pause, undo a rollout.
	Commands []string `json:"commands,omitempty"`
}

// Step is one step of a rollout and its targets.
type Step struct {
	// Selects says which clusters the step takes: a selector, a partitionBy value, or "the rest".
	Selects        string         `json:"selects"`
	MaxUnavailable string         `json:"maxUnavailable"`
	Pause          bool           `json:"pause,omitempty"`
	State          string         `json:"state"`
	Counts         map[string]int `json:"counts"` // by target state
	Targets        []StepTarget   `json:"targets"`
}

// StepTarget is one target of a step.
type StepTarget struct {
	Deployment string `json:"deployment"`
	Cluster    string `json:"cluster"`
	State      string `json:"state"`
	Current    string `json:"current,omitempty"` // the blueprint revision it runs
	Health     Health `json:"health"`
}

// Variant is one PackageVariant and its lineage.
type Variant struct {
	Namespace  string                     `json:"namespace"`
	Name       string                     `json:"name"`
	Package    string                     `json:"package"` // spec.downstream.package
	Upstream   string                     `json:"upstream"`
	Downstream *v1alpha1.ResolvedRevision `json:"downstream,omitempty"`
	Lineage    []v1alpha1.LineageEntry    `json:"lineage,omitempty"`
	Proposal   *v1alpha1.VariantProposal  `json:"proposal,omitempty"`
	Status     Status                     `json:"status"`
	Conditions []metav1.Condition         `json:"conditions,omitempty"`
}

// Build reads a snapshot as a Fleet. It never changes the snapshot, whose objects may be a
// cache's own.
func Build(s Snapshot) Fleet {
	var f Fleet
	variants := variantsByOutput(s.Variants)
	f.Clusters = make([]Cluster, len(s.Clusters))
	for i := range s.Clusters {
		f.Clusters[i] = cluster(&s.Clusters[i])
	}
	slices.SortFunc(f.Clusters, func(a, b Cluster) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	type entry struct {
		index int // in f.Clusters
		wc    *v1alpha1.WorkloadCluster
	}
	clusters := make(map[string]entry, len(s.Clusters))
	for i, c := range f.Clusters {
		clusters[c.Namespace+"/"+c.Name] = entry{index: i}
	}
	for i := range s.Clusters {
		key := s.Clusters[i].Namespace + "/" + s.Clusters[i].Name
		clusters[key] = entry{index: clusters[key].index, wc: &s.Clusters[i]}
	}
	for i := range s.Deployments {
		pd := &s.Deployments[i]
		e, ok := clusters[pd.Namespace+"/"+pd.Spec.Cluster.Name]
		if !ok {
			f.Orphans = append(f.Orphans, deployment(pd, nil, variants))
			continue
		}
		f.Clusters[e.index].Deployments = append(f.Clusters[e.index].Deployments, deployment(pd, e.wc, variants))
	}
	byName := func(a, b Deployment) int { return cmp.Compare(a.Name, b.Name) }
	for i := range f.Clusters {
		c := &f.Clusters[i]
		slices.SortFunc(c.Deployments, byName)
		for _, d := range c.Deployments {
			c.Status = worst(c.Status, d.Status)
		}
	}
	slices.SortFunc(f.Orphans, byName)
	f.Sets = sets(s, f)
	for i := range s.Variants {
		f.Variants = append(f.Variants, variant(&s.Variants[i]))
	}
	slices.SortFunc(f.Variants, func(a, b Variant) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return f
}

func cluster(wc *v1alpha1.WorkloadCluster) Cluster {
	own := ClusterHealth(wc)
	c := Cluster{
		Namespace: wc.Namespace, Name: wc.Name, Labels: wc.Labels,
		Engine:   string(cmp.Or(wc.Spec.Sync.Engine, v1alpha1.EngineConfigSync)),
		Approval: string(cmp.Or(wc.Spec.Approval, v1alpha1.ApprovalAutomatic)),
		Suspend:  wc.Spec.Suspend, Status: own, Own: own,
		Conditions: wc.Status.Conditions, Published: wc.Status.DeployedPackages,
		Deployments: []Deployment{},
	}
	if p := wc.Status.Proposal; p != nil {
		var published []v1alpha1.PublishedPin
		if wc.Status.DeployedPackages != nil {
			published = wc.Status.DeployedPackages.Packages
		}
		c.Proposal = &Proposal{Revision: p.Revision, Branch: p.Branch, Commit: p.Commit, Summary: p.Summary,
			Changes: orEmpty(render.Diff(published, p.Packages)),
			Command: fmt.Sprintf("flotilla approve %s -n %s", wc.Name, wc.Namespace)}
	}
	return c
}

func deployment(pd *v1alpha1.PackageDeployment, wc *v1alpha1.WorkloadCluster, variants map[string]*v1alpha1.PackageVariant) Deployment {
	d := Deployment{
		Namespace: pd.Namespace, Name: pd.Name, Cluster: pd.Spec.Cluster.Name, Package: pd.Spec.Package.Name,
		Set: pd.Labels[v1alpha1.LabelPackageSet], Wants: pd.Spec.Package.Revision,
		Pinned: pinned(pd), Resolved: pd.Status.Resolved, Published: published(wc, pd),
		DeployedPackagesRevision: pd.Status.DeployedPackagesRevision,
		Blueprint:                pd.Annotations[setplan.AnnotationBlueprint],
		SyncObject:               pd.Status.SyncObject, Status: DeploymentHealth(pd), Conditions: pd.Status.Conditions,
	}
	if r := pd.Spec.Package.Repository; r != nil {
		d.Repository = r.Name
	}
	if r := pd.Status.Resolved; r != nil {
		if pv := variants[pd.Namespace+"/"+r.Repository+"/"+r.Tag]; pv != nil {
			d.Lineage = append([]string{r.Tag}, reverse(pv.Status.Lineage)...)
		}
	}
	return d
}

// variantsByOutput indexes variants by the revision they last published: namespace/repository/tag.
func variantsByOutput(vs []v1alpha1.PackageVariant) map[string]*v1alpha1.PackageVariant {
	out := map[string]*v1alpha1.PackageVariant{}
	for i := range vs {
		if d := vs[i].Status.Downstream; d != nil {
			out[vs[i].Namespace+"/"+d.Repository+"/"+d.Tag] = &vs[i]
		}
	}
	return out
}

func reverse(l []v1alpha1.LineageEntry) []string {
	tags := make([]string, 0, len(l))
	for i := len(l) - 1; i >= 0; i-- {
		tags = append(tags, l[i].Tag)
	}
	return tags
}

func sets(s Snapshot, f Fleet) []Set {
	labels := map[string]map[string]string{}
	for _, c := range f.Clusters {
		labels[c.Namespace+"/"+c.Name] = c.Labels
	}
	owned := map[string][]*v1alpha1.PackageDeployment{}
	for i := range s.Deployments {
		pd := &s.Deployments[i]
		if name := pd.Labels[v1alpha1.LabelPackageSet]; name != "" {
			owned[pd.Namespace+"/"+name] = append(owned[pd.Namespace+"/"+name], pd)
		}
	}
	out := make([]Set, 0, len(s.Sets))
	for i := range s.Sets {
		set := &s.Sets[i]
		out = append(out, Set{
			Namespace: set.Namespace, Name: set.Name, Package: set.Spec.Package.Name, Revision: setRevision(set),
			Strategy: string(cmp.Or(set.Spec.Strategy.Type, v1alpha1.StrategyAllAtOnce)),
			Targets:  set.Status.Targets, Updated: set.Status.Updated, Ready: set.Status.Ready, Failed: set.Status.Failed,
			Status: SetHealth(set), Conditions: set.Status.Conditions, Problems: set.Status.Problems, Promotion: set.Status.Promotion,
			Rollout: setRollout(set, owned[set.Namespace+"/"+set.Name], labels),
		})
	}
	slices.SortFunc(out, func(a, b Set) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) })
	return out
}

// maxStepTargets bounds the targets listed per step (the counts cover them all): a step of a
// thousand clusters stays readable and its JSON small. The ones that need a person come first.
const maxStepTargets = 50

// setRollout is a RollingUpdate's steps with their targets, as the rollout itself partitions and
// classifies them (rollout.Plan over setplan.RolloutTarget); nil for AllAtOnce.
func setRollout(set *v1alpha1.PackageSet, owned []*v1alpha1.PackageDeployment, labels map[string]map[string]string) *Rollout {
	ru := set.Spec.Strategy.RollingUpdate
	if set.Spec.Strategy.Type != v1alpha1.StrategyRollingUpdate || ru == nil {
		return nil
	}
	st := set.Status.Rollout
	r := &Rollout{Undeployed: max(set.Status.Targets-len(owned), 0), Steps: []Step{}}
	prefix := ""
	if st != nil {
		r.Revision, r.Step, r.Paused, r.Halted, r.Done = st.Revision, st.Step, st.Paused, st.Halted, rollout.Done(st)
		r.Message, r.FailedTargets, r.RolledBack = st.Message, st.FailedTargets, st.RolledBack
		prefix, _ = fleet.SplitTag(st.Revision)
	}
	targets := make([]rollout.Target, 0, len(owned))
	cluster, health := map[string]string{}, map[string]Health{}
	for _, pd := range owned {
		targets = append(targets, setplan.RolloutTarget(pd, set.Spec.Variant != nil, prefix, labels[pd.Namespace+"/"+pd.Spec.Cluster.Name]))
		cluster[pd.Name], health[pd.Name] = pd.Spec.Cluster.Name, DeploymentHealth(pd).Health
	}
	plan, err := rollout.Plan(ru, targets, st)
	if err != nil {
		r.Message = "cannot show the steps: " + err.Error()
		return r
	}
	for i, p := range plan {
		step := Step{Selects: selects(ru, p), MaxUnavailable: "1", Pause: p.Step.Pause, State: string(p.State), Counts: map[string]int{}, Targets: []StepTarget{}}
		if p.Step.MaxUnavailable != nil {
			step.MaxUnavailable = p.Step.MaxUnavailable.String()
		}
		slices.SortStableFunc(p.Targets, func(a, b rollout.PlannedTarget) int { return cmp.Compare(stateOrder(a.State), stateOrder(b.State)) })
		for _, t := range p.Targets {
			step.Counts[string(t.State)]++
			if len(step.Targets) < maxStepTargets {
				step.Targets = append(step.Targets, StepTarget{Deployment: t.Name, Cluster: cluster[t.Name], State: string(t.State), Current: t.Current, Health: health[t.Name]})
			}
		}
		r.Steps = append(r.Steps, step)
		if p.State != rollout.StepPending && p.State != rollout.StepDone || r.Done {
			r.Step = i // with partitionBy, the step found by its value
		}
	}
	switch {
	case r.Paused:
		r.Commands = append(r.Commands, fmt.Sprintf("flotilla rollout resume %s -n %s", set.Name, set.Namespace))
	case r.Halted:
		r.Commands = append(r.Commands, fmt.Sprintf("flotilla rollout undo %s -n %s", set.Name, set.Namespace))
	}
	return r
}

func stateOrder(s rollout.TargetState) int {
	return slices.Index([]rollout.TargetState{rollout.TargetFailed, rollout.TargetRolledBack, rollout.TargetMoving, rollout.TargetWaiting, rollout.TargetDone}, s)
}

// selects describes which clusters a step takes.
func selects(ru *v1alpha1.RollingUpdate, p rollout.PlannedStep) string {
	switch {
	case ru.PartitionBy != "" && p.Partition != "":
		return ru.PartitionBy + "=" + p.Partition
	case ru.PartitionBy != "":
		return "clusters without " + ru.PartitionBy
	case p.Step.Selector == nil:
		return "the rest"
	}
	sel, err := p.Step.Selector.Selector()
	if err != nil || sel.Empty() {
		return "the rest"
	}
	return sel.String()
}

func variant(pv *v1alpha1.PackageVariant) Variant {
	up := pv.Spec.Upstream
	upstream := "variant " + up.Variant
	if up.Variant == "" {
		upstream = up.Name + "@" + cmp.Or(up.Revision, "latest")
	}
	return Variant{Namespace: pv.Namespace, Name: pv.Name, Package: pv.Spec.Downstream.Package, Upstream: upstream,
		Downstream: pv.Status.Downstream, Lineage: pv.Status.Lineage, Proposal: pv.Status.Proposal, Status: VariantHealth(pv), Conditions: pv.Status.Conditions}
}

// setRevision is the revision a set asks for: its spec's, or, promoted from another set, the one
// it deploys and where it comes from (the chain dev → staging → prod reads along the table).
func setRevision(set *v1alpha1.PackageSet) string {
	rf := set.Spec.Package.RevisionFrom
	if rf == nil {
		return set.Spec.Package.Revision
	}
	rev := set.Spec.Package.Revision
	if p := set.Status.Promotion; p != nil {
		rev = p.Revision
	}
	return rev + " ← " + rf.PackageSet
}

func pinned(pd *v1alpha1.PackageDeployment) string {
	if r := pd.Status.Resolved; r != nil {
		return fmt.Sprintf("v%d", r.Revision)
	}
	return "-"
}

// published is the deployed-packages revision carrying the deployment's pin, or what is pending.
func published(c *v1alpha1.WorkloadCluster, pd *v1alpha1.PackageDeployment) string {
	switch {
	case c == nil:
		return "no cluster"
	case c.Status.Proposal != nil && !meta.IsStatusConditionTrue(pd.Status.Conditions, v1alpha1.ConditionPublished):
		return fmt.Sprintf("proposed v%d", c.Status.Proposal.Revision)
	case pd.Status.DeployedPackagesRevision > 0:
		return fmt.Sprintf("v%d", pd.Status.DeployedPackagesRevision)
	}
	return "-"
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// chain is a lineage root first: free5gc-upf/v7 → upf-telco/v4.
func chain(l []v1alpha1.LineageEntry) string {
	if len(l) == 0 {
		return "-"
	}
	tags := make([]string, len(l))
	for i, e := range l {
		tags[i] = e.Tag
	}
	return strings.Join(tags, " → ")
}
