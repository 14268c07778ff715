package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// conditioned is an object and how to read its conditions.
type conditioned struct {
	obj   client.Object
	conds func() []metav1.Condition
}

func repoConds(r *v1alpha1.Repository) conditioned {
	return conditioned{r, func() []metav1.Condition { return r.Status.Conditions }}
}

func clusterConds(c *v1alpha1.WorkloadCluster) conditioned {
	return conditioned{c, func() []metav1.Condition { return c.Status.Conditions }}
}

func deploymentConds(pd *v1alpha1.PackageDeployment) conditioned {
	return conditioned{pd, func() []metav1.Condition { return pd.Status.Conditions }}
}

// sshSecret creates a Secret with the keys Flux uses for ssh.
func (f *fixture) sshSecret(name string, data map[string][]byte) func(*v1alpha1.Repository) {
	f.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Data: data})
	return func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: name} }
}

// A catalog over ssh:// and a cluster repository at an scp-style address, with identity and
// known_hosts from the Secret: both become Ready and the deployment is published, and no status
// or log line carries the key.
func TestSSHRepositories(t *testing.T) {
	f := newFixture(t)
	ss := f.git.ServeSSH(t)
	withKey := f.sshSecret("git-ssh", map[string][]byte{"identity": ss.ClientKey, "known_hosts": []byte(ss.KnownHosts)})
	catalog := f.repository("catalog", withKey, func(r *v1alpha1.Repository) { r.Spec.Git.URL = ss.URL("catalog") })
	edge := f.repository("edge01", withKey, func(r *v1alpha1.Repository) { r.Spec.Git.URL = ss.SCPURL("edge01") })
	f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "v2")

	f.condition(catalog, repoConds(catalog).conds, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")
	f.condition(edge, repoConds(edge).conds, v1alpha1.ConditionReady, metav1.ConditionTrue, "Fetched")
	c := f.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v2"}))
	published := c.Status.DeployedPackages
	f.g.Expect(gittest.Tags(t, f.edge)).To(HaveKeyWithValue(published.Tag, published.Commit), "published over ssh")
	so := f.syncObject(published.Tag, pd)
	f.g.Expect(so.Object).To(HaveKeyWithValue("spec", HaveKeyWithValue("git", HaveKeyWithValue("repo", ss.URL("catalog")))))

	for _, o := range []client.Object{catalog, edge, c, pd} {
		f.g.Expect(env.Client.Get(f.ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
		expectNoKey(f.g, fmt.Sprintf("%+v", o), ss.ClientKey)
	}
	expectNoKey(f.g, testenv.Logs(), ss.ClientKey)
}

// Without known_hosts, or with one that does not list the server, the Repository is not Ready
// and says what to add; a deployment reading through it reports the same.
func TestSSHRepositoryWithoutKnownHosts(t *testing.T) {
	f := newFixture(t)
	ss := f.git.ServeSSH(t)
	f.repository("edge01")
	f.cluster()
	sshURL := func(r *v1alpha1.Repository) { r.Spec.Git.URL = ss.URL("catalog") }

	noKnownHosts := f.repository("catalog", sshURL, f.sshSecret("no-known-hosts", map[string][]byte{"identity": ss.ClientKey}))
	msg := f.condition(noKnownHosts, repoConds(noKnownHosts).conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, "SecretInvalid").Message
	f.g.Expect(msg).To(ContainSubstring("no known_hosts"))
	f.condition(noKnownHosts, repoConds(noKnownHosts).conds, v1alpha1.ConditionReady, metav1.ConditionFalse, "SecretInvalid")

	other := "git.example.com " + strings.SplitN(ss.KnownHosts, " ", 2)[1]
	unknown := f.repository("unknown-host", sshURL, f.sshSecret("other-host", map[string][]byte{"identity": ss.ClientKey, "known_hosts": []byte(other)}))
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1", func(pd *v1alpha1.PackageDeployment) {
		pd.Spec.Package.Repository = &v1alpha1.LocalObjectReference{Name: "unknown-host"}
	})
	for _, o := range []conditioned{repoConds(unknown), deploymentConds(pd)} {
		msg := f.condition(o.obj, o.conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, "HostKeyUnknown").Message
		f.g.Expect(msg).To(ContainSubstring("known_hosts has no key for [127.0.0.1]:"))
	}
	f.condition(unknown, repoConds(unknown).conds, v1alpha1.ConditionReady, metav1.ConditionFalse, "HostKeyUnknown")
	f.g.Expect(pd.Status.Resolved).To(BeNil())
	f.g.Expect(gittest.Tags(t, f.edge)).NotTo(HaveKey(ContainSubstring("nginx")))
}

// The shared test manager runs with the production default: file:// repositories are refused,
// and everything that reads through one says which flag enables them.
func TestLocalRepositoryRefused(t *testing.T) {
	f := newFixture(t)
	local := func(r *v1alpha1.Repository) { r.Spec.Git.URL = "file://" + f.git.Dir(r.Name) }
	catalog := f.repository("catalog", local)
	f.repository("edge01", local)
	c := f.cluster()
	pd := f.deployment("edge01-nginx", "nginx-hello", "v1")
	for _, o := range []conditioned{repoConds(catalog), clusterConds(c), deploymentConds(pd)} {
		msg := f.condition(o.obj, o.conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, "LocalRepositoryRefused").Message
		f.g.Expect(msg).To(ContainSubstring("--allow-local-repositories"))
	}
	f.condition(catalog, repoConds(catalog).conds, v1alpha1.ConditionReady, metav1.ConditionFalse, "LocalRepositoryRefused")
	f.g.Expect(pd.Status.Resolved).To(BeNil())
	f.g.Expect(gittest.Tags(t, f.edge)).To(BeEmpty(), "a refused repository publishes nothing")
}

// A tenant naming another tenant's private repository without its credentials never resolves
// what the other tenant's Secret fetched, though the controller's mirror of it is fresh.
func TestPrivateRepositoryNotSharedAcrossNamespaces(t *testing.T) {
	const password = "tenant-a-s3cr3t"
	a := newFixture(t, gittest.WithBasicAuth("flotilla", password))
	a.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: a.ns},
		StringData: map[string]string{"username": "flotilla", "password": password},
	})
	withSecret := func(r *v1alpha1.Repository) { r.Spec.Git.SecretRef = &v1alpha1.LocalObjectReference{Name: "git-creds"} }
	a.repository("catalog", withSecret)
	a.repository("edge01", withSecret)
	a.cluster()
	a.deployment("edge01-nginx", "nginx-hello", "v1")
	a.clusterWith(ConsistOf(v1alpha1.PublishedPin{Deployment: "edge01-nginx", Tag: "nginx-hello/v1"}))
	privateCatalog := a.git.URL + "/catalog.git"

	t.Run("tenant-b", func(t *testing.T) {
		b := newFixture(t) // its own namespace, and its own git server for its cluster repository
		catalog := b.repository("catalog", func(r *v1alpha1.Repository) { r.Spec.Git.URL = privateCatalog })
		b.repository("edge01")
		c := b.cluster()
		pd := b.deployment("edge01-nginx", "nginx-hello", "v1")
		for _, o := range []conditioned{repoConds(catalog), deploymentConds(pd)} {
			b.condition(o.obj, o.conds, v1alpha1.ConditionStalled, metav1.ConditionTrue, "AuthenticationFailed")
		}
		b.g.Consistently(func(g Gomega) {
			g.Expect(env.Client.Get(b.ctx, client.ObjectKeyFromObject(pd), pd)).To(Succeed())
			g.Expect(pd.Status.Resolved).To(BeNil(), "tenant B resolved tenant A's private revision")
			g.Expect(env.Client.Get(b.ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			if c.Status.DeployedPackages != nil {
				g.Expect(c.Status.DeployedPackages.Packages).To(BeEmpty())
			}
			g.Expect(gittest.Tags(t, b.edge)).NotTo(HaveKey(ContainSubstring("nginx")))
		}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
		b.g.Expect(env.Client.Get(b.ctx, client.ObjectKeyFromObject(catalog), catalog)).To(Succeed())
		b.g.Expect(catalog.Status.Head).To(BeEmpty(), "tenant B's Repository shows tenant A's head")
	})
}

// expectNoKey fails when s holds any line of a PEM key's body.
func expectNoKey(g Gomega, s string, key []byte) {
	for _, line := range strings.Split(string(key), "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") {
			g.Expect(s).NotTo(ContainSubstring(line), "leaks the private key")
		}
	}
}
