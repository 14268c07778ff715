package controller_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/remotecluster"
)

// TestKubeconfigRefused gives WorkloadClusters kubeconfigs that would run a
// process or read files of the controller's machine. Each is refused before client-go sees it:
// Bootstrapped=False (KubeconfigRefused) names what was refused, the exec plugin never runs (its
// marker file never appears), and no file path is opened (each points at a FIFO, whose open for
// reading would block until a writer comes: a non-blocking open for writing fails with ENXIO as
// long as nobody opened it for reading).
func TestKubeconfigRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "exec-ran")
	execPlugin := &clientcmdapi.ExecConfig{
		APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh",
		Args: []string{"-c", "touch " + marker + "; exit 1"}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}

	// The control: with the plugin allowed, the same kubeconfig does run it on the first request,
	// so the refusals below are what keeps it from running.
	t.Run("control", func(t *testing.T) {
		g := NewWithT(t)
		cfg, err := remotecluster.Policy{AllowExec: true}.RESTConfig(workloadKubeconfig(t, func(c *clientcmdapi.Config, user *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			*user = clientcmdapi.AuthInfo{Exec: execPlugin}
		}))
		g.Expect(err).NotTo(HaveOccurred())
		cl, err := client.New(cfg, client.Options{})
		if err == nil {
			_ = cl.List(t.Context(), &corev1.NamespaceList{})
		}
		g.Expect(marker).To(BeAnExistingFile())
		g.Expect(os.Remove(marker)).To(Succeed())
	})

	cases := []struct {
		name   string
		edit   func(c *clientcmdapi.Config, user *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster)
		refuse string
	}{
		{"exec", func(_ *clientcmdapi.Config, user *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			*user = clientcmdapi.AuthInfo{Exec: execPlugin}
		}, `user "tenant": exec plugins are not allowed`},
		{"auth-provider", func(_ *clientcmdapi.Config, user *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			*user = clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://127.0.0.1:1"}}}
		}, `user "tenant": auth-provider plugins are not allowed`},
		{"token-file", func(_ *clientcmdapi.Config, user *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			*user = clientcmdapi.AuthInfo{TokenFile: fifo}
		}, `user "tenant": tokenFile (a file path) is not allowed`},
		{"client-certificate", func(_ *clientcmdapi.Config, user *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			user.ClientCertificateData, user.ClientCertificate = nil, fifo
			user.ClientKeyData, user.ClientKey = nil, fifo
		}, `user "tenant": client-certificate (a file path) is not allowed`},
		{"certificate-authority", func(_ *clientcmdapi.Config, _ *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster) {
			cluster.CertificateAuthorityData, cluster.CertificateAuthority = nil, fifo
		}, `cluster "tenant": certificate-authority (a file path) is not allowed`},
		{"unused entry", func(c *clientcmdapi.Config, _ *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			// Entries the current context does not use are refused too: a later context switch
			// must not turn them on.
			c.AuthInfos["spare"] = &clientcmdapi.AuthInfo{Exec: execPlugin}
		}, `user "spare": exec plugins are not allowed`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.repository("catalog")
			f.repository("edge01")
			f.create(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "kubeconfig", Namespace: f.ns},
				Data:       map[string][]byte{"value": workloadKubeconfig(t, tc.edit)},
			})
			c := f.cluster(func(c *v1alpha1.WorkloadCluster) {
				c.Spec.KubeConfigSecretRef = &v1alpha1.SecretKeyReference{Name: "kubeconfig", Key: "value"}
			})
			pd := f.deployment("edge01-nginx", "nginx-hello", "v1")

			cond := f.condition(c, func() []metav1.Condition { return c.Status.Conditions }, v1alpha1.ConditionBootstrapped, metav1.ConditionFalse, "KubeconfigRefused")
			f.g.Expect(cond.Message).To(ContainSubstring(tc.refuse))
			if tc.name == "exec" {
				f.g.Expect(cond.Message).To(ContainSubstring("--insecure-kubeconfig-exec"))
				// Health reads the cluster through the same policy.
				synced := f.condition(pd, func() []metav1.Condition { return pd.Status.Conditions }, v1alpha1.ConditionSynced, metav1.ConditionFalse, "KubeconfigRefused")
				f.g.Expect(synced.Message).To(ContainSubstring("exec plugins are not allowed"))
			}
			// Publishing does not need the workload cluster: the pin is published all the same.
			f.clusterWith(ConsistOf(HaveField("Deployment", pd.Name)))
			f.g.Consistently(func() error { return openedForReading(fifo) }, time.Second, 100*time.Millisecond).Should(Succeed())
			f.g.Expect(marker).NotTo(BeAnExistingFile())
		})
	}
}

// workloadKubeconfig is a kubeconfig for the test API server (a reachable server, so a plugin
// would really be run) whose user and cluster entries, both named tenant, edit changes.
func workloadKubeconfig(t *testing.T, edit func(c *clientcmdapi.Config, user *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster)) []byte {
	t.Helper()
	raw, err := env.AdminKubeconfig("tenant-" + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	user, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"tenant": user}
	cfg.Clusters = map[string]*clientcmdapi.Cluster{"tenant": cluster}
	cfg.Contexts = map[string]*clientcmdapi.Context{"tenant": {AuthInfo: "tenant", Cluster: "tenant"}}
	cfg.CurrentContext = "tenant"
	edit(cfg, user, cluster)
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openedForReading fails when some process has the FIFO open for reading.
func openedForReading(fifo string) error {
	fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ENXIO) {
		return nil
	}
	if err == nil {
		_ = syscall.Close(fd)
		return errors.New(fifo + " was opened for reading")
	}
	return err
}
