// Package apiproxy serves a real API server through a TLS reverse proxy that sees every request
// first, for tests that count a controller's requests to a workload cluster or make them fail.
package apiproxy

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Serve serves the API server of cfg (with cfg's credentials) over TLS until the test ends;
// intercept sees each request first and answers it itself when it returns true. Clients
// authenticate with any token (Kubeconfig's): the proxy drops it.
func Serve(t testing.TB, cfg *rest.Config, intercept func(http.ResponseWriter, *http.Request) bool) *httptest.Server {
	t.Helper()
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Header.Del("Authorization") },
		Transport: transport,
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !intercept(w, r) {
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Kubeconfig is a kubeconfig for srv, trusting its certificate, with a token the proxy drops.
func Kubeconfig(t testing.TB, srv *httptest.Server) []byte {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	out, err := clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"workload": {Server: srv.URL, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"workload": {Token: "proxy"}},
		Contexts:       map[string]*clientcmdapi.Context{"workload": {Cluster: "workload", AuthInfo: "workload"}},
		CurrentContext: "workload",
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
