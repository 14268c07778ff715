package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/yaml"
)

// TestInstallsNameTheImage: kustomize (config/manager) and Helm (charts/flotilla) install the
// image this package builds, under one tag, and the chart's appVersion is that tag.
func TestInstallsNameTheImage(t *testing.T) {
	const root = "../.."
	read := func(p string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	var deployment struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Image string } `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	read("config/manager/manager.yaml", &deployment)
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("config/manager/manager.yaml: %d containers", len(deployment.Spec.Template.Spec.Containers))
	}
	image := deployment.Spec.Template.Spec.Containers[0].Image
	if _, err := name.NewTag(image); err != nil {
		t.Fatalf("config/manager/manager.yaml: image %q: %v", image, err)
	}
	repo, tag, _ := strings.Cut(image, ":")
	if repo != Name || tag == "latest" {
		t.Errorf("config/manager/manager.yaml: image %s, want %s:VERSION, the image make image builds", image, Name)
	}

	var values struct {
		Image struct{ Repository, Tag string } `json:"image"`
	}
	read("charts/flotilla/values.yaml", &values)
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	read("charts/flotilla/Chart.yaml", &chart)
	if values.Image.Repository != Name || values.Image.Tag != tag || chart.AppVersion != tag {
		t.Errorf("charts/flotilla: image %s:%s, appVersion %s; want %s (make helm)", values.Image.Repository, values.Image.Tag, chart.AppVersion, image)
	}
}
