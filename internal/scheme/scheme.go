// Package scheme builds the runtime.Scheme of every kind flotilla reads or writes.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/flotilla-dev/flotilla/api/v1alpha1"
)

// New returns a scheme with the Kubernetes built-in kinds and flotilla's.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}
