package remotecluster

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func kubeconfig(t *testing.T, edit func(user *clientcmdapi.AuthInfo, cluster *clientcmdapi.Cluster)) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "s3cr3t-token"}
	cfg.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "x"
	edit(cfg.AuthInfos["u"], cfg.Clusters["c"])
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPolicy(t *testing.T) {
	exec := &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/true", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	cases := []struct {
		name      string
		policy    Policy
		edit      func(*clientcmdapi.AuthInfo, *clientcmdapi.Cluster)
		refused   []string // "" when accepted
		wantToken bool
	}{
		{name: "embedded data", edit: func(*clientcmdapi.AuthInfo, *clientcmdapi.Cluster) {}, wantToken: true},
		{name: "exec", edit: func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) { u.Token, u.Exec = "", exec },
			refused: []string{`user "u": exec plugins are not allowed`, "--insecure-kubeconfig-exec"}},
		{name: "exec allowed", policy: Policy{AllowExec: true}, edit: func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) { u.Token, u.Exec = "", exec }},
		{name: "auth provider", edit: func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}, refused: []string{`user "u": auth-provider plugins are not allowed`}},
		{name: "token file, even with exec allowed", policy: Policy{AllowExec: true}, edit: func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			u.Token, u.TokenFile = "", "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}, refused: []string{`user "u": tokenFile (a file path) is not allowed`}},
		{name: "certificate and key files", edit: func(u *clientcmdapi.AuthInfo, _ *clientcmdapi.Cluster) {
			u.ClientCertificate, u.ClientKey = "/etc/cert.pem", "/etc/key.pem"
		}, refused: []string{`client-certificate (a file path)`, `client-key (a file path)`}},
		{name: "CA file", edit: func(_ *clientcmdapi.AuthInfo, c *clientcmdapi.Cluster) { c.CertificateAuthority = "/etc/ca.pem" },
			refused: []string{`cluster "c": certificate-authority (a file path) is not allowed`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := tc.policy.RESTConfig(kubeconfig(t, tc.edit))
			if len(tc.refused) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if tc.wantToken && cfg.BearerToken != "s3cr3t-token" {
					t.Errorf("token not taken from the kubeconfig")
				}
				if cfg.Timeout != RequestTimeout {
					t.Errorf("request timeout %s, want every request to a workload cluster bounded by %s", cfg.Timeout, RequestTimeout)
				}
				return
			}
			if !errors.Is(err, ErrKubeconfigRefused) {
				t.Fatalf("want ErrKubeconfigRefused, got %v", err)
			}
			for _, want := range tc.refused {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "/etc/") || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error repeats a value of the kubeconfig: %v", err)
			}
		})
	}
}

// A kubeconfig that does not parse is reported without quoting it.
func TestPolicyInvalidKubeconfig(t *testing.T) {
	_, err := Policy{}.RESTConfig([]byte("token: s3cr3t\n\tnot yaml: ["))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("want an error that does not quote the kubeconfig, got %v", err)
	}
}

// client-go's validation messages are not passed on: they may quote a value of the kubeconfig.
func TestPolicyUnusableKubeconfigQuotesNothing(t *testing.T) {
	data := kubeconfig(t, func(_ *clientcmdapi.AuthInfo, c *clientcmdapi.Cluster) {
		c.ProxyURL = "socks9://bob:s3cr3t@proxy.example:1080"
	})
	_, err := Policy{}.RESTConfig(data)
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "proxy-url") {
		t.Fatalf("want an unusable-kubeconfig error that names proxy-url and quotes nothing, got %v", err)
	}
}
