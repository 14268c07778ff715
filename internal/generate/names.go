package generate

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxDeploymentName is the longest generated PackageDeployment name: short enough to also be a
// label value, wherever a deployment's name has to go.
const maxDeploymentName = 63

// DeploymentName makes a deterministic valid name of at most 63 characters: names that are
// longer are cut and suffixed with "-" + 8 hex chars of a sha256 of the full name, so distinct
// long names stay distinct. It only shortens: a name with characters a Kubernetes name cannot
// have stays invalid, and Generate reports it.
func DeploymentName(s string) string {
	if len(s) <= maxDeploymentName {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	hash := hex.EncodeToString(sum[:4])
	// A name may not have "-." or ".-" nor end in either, so the cut prefix loses its trailing
	// separators.
	prefix := strings.TrimRight(s[:maxDeploymentName-len(hash)-1], "-.")
	if prefix == "" {
		return hash
	}
	return prefix + "-" + hash
}
