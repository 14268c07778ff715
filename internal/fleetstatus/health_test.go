package fleetstatus

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

func TestDeploymentHealth(t *testing.T) {
	tests := []struct {
		name       string
		generation int64
		conds      []metav1.Condition
		want       Health
		reason     string
	}{
		{"no status yet", 1, nil, Unknown, "NoStatus"},
		{"published, no health feedback", 0, []metav1.Condition{cond("Ready", "True", "Published")}, Healthy, "Published"},
		{"published and synced", 0, []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "True", "Synced")}, Healthy, "Published"},
		{"published, agent syncing", 0, []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "False", "OldRevision")}, Progressing, "OldRevision"},
		{"published, agent fails", 0, []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "False", "SyncError")}, Degraded, "SyncError"},
		{"published, cluster unreachable", 0, []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "False", "ClusterUnreachable")}, Degraded, "ClusterUnreachable"},
		{"published, Kustomization suspended", 0, []metav1.Condition{cond("Ready", "True", "Published"), cond("Synced", "False", "Suspended")}, Suspended, "Suspended"},
		{"spec changed since Ready", 2, []metav1.Condition{{Type: "Ready", Status: "True", Reason: "Published", ObservedGeneration: 1}}, Progressing, "Published"},
		{"waiting for approval: a person", 0, []metav1.Condition{cond("Ready", "False", "WaitingForApproval"), cond("Reconciling", "True", "WaitingForApproval")}, Waiting, "WaitingForApproval"},
		{"waiting for a dependency: by itself", 0, []metav1.Condition{cond("Ready", "False", "WaitingForDependency")}, Progressing, "WaitingForDependency"},
		{"stalled", 0, []metav1.Condition{cond("Ready", "False", "RevisionNotFound"), cond("Stalled", "True", "RevisionNotFound")}, Degraded, "RevisionNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pd := &v1alpha1.PackageDeployment{}
			pd.Generation, pd.Status.Conditions = tt.generation, tt.conds
			got := DeploymentHealth(pd)
			if got.Health != tt.want || got.Reason != tt.reason {
				t.Errorf("DeploymentHealth = %s %s, want %s %s", got.Health, got.Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestClusterSetVariantHealth(t *testing.T) {
	wc := func(conds ...metav1.Condition) Health {
		c := &v1alpha1.WorkloadCluster{}
		c.Status.Conditions = conds
		return ClusterHealth(c).Health
	}
	set := func(conds ...metav1.Condition) Health {
		s := &v1alpha1.PackageSet{}
		s.Status.Conditions = conds
		return SetHealth(s).Health
	}
	pv := func(conds ...metav1.Condition) Health {
		v := &v1alpha1.PackageVariant{}
		v.Status.Conditions = conds
		return VariantHealth(v).Health
	}
	tests := []struct {
		name      string
		got, want Health
	}{
		{"cluster published", wc(cond("Ready", "True", "Published")), Healthy},
		{"cluster suspended", wc(cond("Ready", "True", "Suspended")), Suspended},
		{"cluster proposal waits", wc(cond("Ready", "False", "WaitingForApproval")), Waiting},
		{"cluster approval outdated", wc(cond("Ready", "False", "ApprovalOutdated")), Waiting},
		{"cluster publishing", wc(cond("Ready", "False", "Publishing")), Progressing},
		{"cluster repository in use", wc(cond("Ready", "False", "RepositoryInUse"), cond("Stalled", "True", "RepositoryInUse")), Degraded},
		{"cluster root sync object refused", wc(cond("Ready", "True", "Published"), cond("Bootstrapped", "False", "KubeconfigRefused")), Degraded},
		{"set ready", set(cond("Ready", "True", "Ready")), Healthy},
		{"set paused: a person resumes it", set(cond("Ready", "False", "RolloutPaused")), Waiting},
		{"set progressing", set(cond("Ready", "False", "Progressing")), Progressing},
		{"set halted", set(cond("Ready", "False", "RolloutHalted"), cond("Stalled", "True", "RolloutHalted")), Degraded},
		{"variant merge conflict", pv(cond("Ready", "False", "MergeConflict"), cond("Stalled", "True", "MergeConflict")), Degraded},
		{"variant waits for approval", pv(cond("Ready", "False", "WaitingForApproval")), Waiting},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

func TestWorse(t *testing.T) {
	for i, h := range Healths {
		for _, o := range Healths[i+1:] {
			if !h.Worse(o) || o.Worse(h) {
				t.Errorf("%s should be worse than %s", h, o)
			}
		}
	}
}
