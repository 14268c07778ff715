package controller_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// Runtime problems become Ready=False with a clear reason, and never undeploy what runs.
func TestRuntimeErrorsKeepWhatIsDeployed(t *testing.T) {
	f := newFixture(t)
	g := f.g
	conds := func(pd *v1alpha1.PackageDeployment) func() []metav1.Condition {
		return func() []metav1.Condition { return pd.Status.Conditions }
	}

	// The cluster does not exist yet.
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")
	msg := f.condition(pd, conds(pd), v1alpha1.ConditionStalled, metav1.ConditionTrue, "ClusterNotFound").Message
	g.Expect(msg).To(ContainSubstring("WorkloadCluster " + f.ns + "/edge01 does not exist"))

	// The catalog Repository object does not exist yet.
	f.repository("edge01")
	f.cluster()
	f.condition(pd, conds(pd), v1alpha1.ConditionReady, metav1.ConditionFalse, "RepositoryNotFound")

	f.repository("catalog")
	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	deployed := *c.Status.DeployedPackages

	// A revision that is not published: the pin stays, nothing is published.
	f.update(pd, func() { pd.Spec.Package.Revision = "v9" })
	msg = f.condition(pd, conds(pd), v1alpha1.ConditionReady, metav1.ConditionFalse, "RevisionNotFound").Message
	g.Expect(msg).To(ContainSubstring("keeping the current pin nginx-hello/v1"))
	g.Expect(pd.Status.Resolved.Tag).To(Equal("nginx-hello/v1"))

	// A package that does not exist.
	other := f.deployment("edge01-missing", "no-such-package", "v1")
	f.condition(other, conds(other), v1alpha1.ConditionReady, metav1.ConditionFalse, "PackageNotFound")

	g.Consistently(func() string { return gittest.Branches(t, f.edge)["main"] }, "2s").Should(Equal(deployed.Commit))
	g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
	g.Expect(*c.Status.DeployedPackages).To(Equal(deployed))
}

// Credentials come from a Secret in the Repository's namespace; a wrong password is a condition
// that never shows the password, and publishes nothing.
func TestBasicAuthFromSecret(t *testing.T) {
	const password = "s3cr3t-planted-password"
	f := newFixture(t, gittest.WithBasicAuth("flotilla", password))
	g := f.g
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: f.ns},
		StringData: map[string]string{"username": "flotilla", "password": "wrong-" + password},
	}
	f.create(secret)
	withSecret := func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "git-creds"} }
	catalog := f.repository("catalog", withSecret)
	f.repository("edge01", withSecret)
	c := f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")

	for _, obj := range []struct {
		o     client.Object
		conds func() []metav1.Condition
	}{
		{catalog, func() []metav1.Condition { return catalog.Status.Conditions }},
		{c, func() []metav1.Condition { return c.Status.Conditions }},
		{pd, func() []metav1.Condition { return pd.Status.Conditions }},
	} {
		cond := f.condition(obj.o, obj.conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, "AuthenticationFailed")
		g.Expect(cond.Message).NotTo(ContainSubstring(password))
		g.Expect(cond.Message).To(ContainSubstring(f.git.URL))
	}
	g.Expect(gittest.Tags(t, f.edge)).To(BeEmpty())

	// Fix the password: everything publishes.
	f.update(secret, func() { secret.Data = map[string][]byte{"username": []byte("flotilla"), "password": []byte(password)} })
	// Secrets are not watched (flotilla only gets them); the repository poll picks the fix up.
	f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	f.condition(catalog, func() []metav1.Condition { return catalog.Status.Conditions }, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")

	// No status, event or log line carries either password (the wrong one was tried for a while).
	for _, o := range []client.Object{catalog, c, pd} {
		g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		g.Expect(strings.Contains(fmt.Sprintf("%+v", o), password)).To(BeFalse())
	}
	var events eventsv1.EventList
	g.Expect(env.Client.List(f.ctx, &events, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(events.Items).NotTo(BeEmpty(), "the publish event is recorded")
	g.Expect(fmt.Sprintf("%+v", events.Items)).NotTo(ContainSubstring(password))
	logs := testenv.Logs()
	g.Expect(logs).To(ContainSubstring("authentication failed"), "the failure is logged")
	g.Expect(logs).NotTo(ContainSubstring(password))
}

// A cluster that could not publish for a while (its credentials Secret gone) is Ready again once
// the Secret is back: the reconcile after a failure publishes again rather than trusting the
// publish before it, finds the branch holding what it would publish, and writes nothing. Ready
// must not stay on the failure until the next verification, minutes later.
func TestReadyAgainWhenTheFailureIsOver(t *testing.T) {
	f := newFixture(t)
	g := f.g
	secret := func() *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: f.ns},
			StringData: map[string]string{"username": "flotilla", "password": "any"},
		}
	}
	f.create(secret())
	f.repository("catalog")
	f.repository("edge01", func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "git-creds"} })
	f.cluster()
	f.deployment("edge01-nginx", "nginx-hello", "v1")
	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	conds := func() []metav1.Condition { return c.Status.Conditions }
	f.condition(c, conds, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published")
	commit := c.Status.DeployedPackages.Commit
	touch := func(v string) {
		f.update(c, func() { metav1.SetMetaDataAnnotation(&c.ObjectMeta, "test.flotilla.dev/touch", v) })
	}

	g.Expect(env.Client.Delete(f.ctx, secret())).To(Succeed())
	touch("secret gone")
	msg := f.condition(c, conds, v1alpha1.ConditionReady, metav1.ConditionFalse, "SecretInvalid").Message
	g.Expect(msg).To(ContainSubstring("git-creds not found"))

	f.create(secret())
	touch("secret back")
	msg = f.condition(c, conds, v1alpha1.ConditionReady, metav1.ConditionTrue, "Published").Message
	g.Expect(msg).To(ContainSubstring(c.Status.DeployedPackages.Tag + " is published"))
	g.Expect(meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionStalled)).To(BeNil())
	g.Expect(gittest.Branches(t, f.edge)["main"]).To(Equal(commit), "nothing was published again")
}
