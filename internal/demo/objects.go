package demo

import (
	"os"
	"path/filepath"
	"strings"
)

func deploymentYAML(name, image string) string {
	return strings.NewReplacer("NAME", name, "IMAGE", image).Replace(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: NAME
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: NAME}
  template:
    metadata:
      labels: {app: NAME}
    spec:
      containers:
      - name: NAME
        image: IMAGE
`)
}

// fleetYAML is the fleet the demo deploys; the deployment edge02-nginx lives in a file of its own
// so that step 3 can delete it.
func fleetYAML(d *sandbox) string {
	var b strings.Builder
	repo := func(name string) {
		b.WriteString(`---
apiVersion: flotilla.dev/v1alpha1
kind: Repository
metadata: {name: ` + name + `, namespace: fleet}
spec:
  git:
    url: ` + d.repoURL(name) + `
    syncURL: https://git.example.com/fleet/` + name + `.git
`)
	}
	cluster := func(name, approval string) {
		b.WriteString(`---
apiVersion: flotilla.dev/v1alpha1
kind: WorkloadCluster
metadata: {name: ` + name + `, namespace: fleet, labels: {site-type: edge}}
spec:
  repository: {name: ` + name + `}
  approval: ` + approval + `
`)
	}
	deployment := func(name, cluster, pkg, rev, policy string) string {
		return `---
apiVersion: flotilla.dev/v1alpha1
kind: PackageDeployment
metadata: {name: ` + name + `, namespace: fleet}
spec:
  cluster: {name: ` + cluster + `}
  package: {repository: {name: catalog}, name: ` + pkg + `, revision: ` + rev + `}
  deletionPolicy: ` + policy + `
`
	}
	for _, r := range []string{"catalog", "edge01", "edge02", "core01"} {
		repo(r)
	}
	cluster("edge01", "Automatic")
	cluster("edge02", "Automatic")
	cluster("core01", "Manual")
	b.WriteString(deployment("edge01-nginx", "edge01", "nginx-hello", "v1", "Delete"))
	b.WriteString(deployment("edge01-upf", "edge01", "free5gc-upf", "latest", "Delete"))
	b.WriteString(deployment("core01-nginx", "core01", "nginx-hello", "v1", "Delete"))
	_ = os.WriteFile(filepath.Join(d.dir, "fleet", "edge02-nginx.yaml"), []byte(deployment("edge02-nginx", "edge02", "nginx-hello", "v2", "Orphan")), 0o644)
	return b.String()
}
