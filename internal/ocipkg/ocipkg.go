// Package ocipkg publishes kpt packages as OCI artifacts and reads them back: the format Config
// Sync (sourceType: oci), Flux (OCIRepository) and Argo CD (OCI sources) all sync from.
//
// A package revision is the tag vN of the OCI repository REGISTRY/REPO/PKG. The artifact is an
// OCI image manifest with a minimal image config and one tar+gzip layer holding the package's
// files; see Push for the exact layout. Tags are immutable to flotilla, as git tags are to
// pkgrepo: Push never moves one, and Resolve pins the manifest digest a tag names.
//
// Errors wrap pkgrepo's sentinels (ErrRevisionNotFound, ErrAuthentication, ErrUnreachable,
// ErrCertificateUntrusted, ErrInvalidPackage, ErrTagExists, ...), so callers map both kinds of
// source to the same condition reasons. No error carries a credential.
package ocipkg

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/flotilla-dev/flotilla/internal/pkgrepo"
)

// ErrTagExists is returned by Push when the tag already names another artifact. It is
// pkgrepo's sentinel, so a git tag and an OCI tag that are taken map to the same reason.
var ErrTagExists = pkgrepo.ErrTagExists

// Options say how to reach a registry. The zero value is anonymous https with the system's CAs.
// Options format as redacted under every fmt verb, so logging them cannot leak the password.
type Options struct {
	// Username and Password are sent as basic auth (also how registries take tokens: a
	// token is a password). Both empty: anonymous.
	Username, Password string
	// Insecure allows plain http. Without it every request, redirects included, must be https.
	Insecure bool
	// CABundle holds PEM certificates trusted besides the system's.
	CABundle []byte
	// Transport replaces the default transport (proxy from the environment, the CA bundle).
	// It is used as is, so it cannot be combined with CABundle; the https-only rule still
	// applies on top of it.
	Transport http.RoundTripper
}

// String prints which fields are set, never the credentials.
func (o Options) String() string {
	return fmt.Sprintf("{Username:%s Password:%s Insecure:%t CABundle:%s Transport:%t}",
		redacted(o.Username), redacted(o.Password), o.Insecure, redacted(string(o.CABundle)), o.Transport != nil)
}

// GoString is String for %#v.
func (o Options) GoString() string { return "ocipkg.Options" + o.String() }

// Format makes every verb (%v, %+v, %s, %q, %x, ...) print the redacted form.
func (o Options) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, o.GoString())
		return
	}
	_, _ = io.WriteString(f, o.String())
}

func redacted(s string) string {
	if s == "" {
		return `""`
	}
	return "<redacted>"
}

// Artifact is what Push published.
type Artifact struct {
	// Image is REGISTRY/REPO/PKG.
	Image string
	// Tag is vN.
	Tag string
	// Digest is the manifest's, sha256:...; Image@Digest is what a sync object pins.
	Digest string
	// AlreadyPublished: the tag already named exactly this artifact (same files, same
	// digest), so nothing was written. A retried publish is not an error.
	AlreadyPublished bool
}

// Revision is a published revision of a package, as Resolve found it.
type Revision struct {
	// Number is N of the tag vN.
	Number int
	// Tag is "vN".
	Tag string
	// Image is REGISTRY/REPO/PKG.
	Image string
	// Digest is the manifest digest the tag named, sha256:....
	Digest string
}

var revisionTag = regexp.MustCompile(`^v[1-9][0-9]*$`)

// revisionNumber returns N for the tag vN (no sign, no leading zero, so that each revision has
// exactly one tag), false for any other tag.
func revisionNumber(tag string) (int, bool) {
	if !revisionTag.MatchString(tag) {
		return 0, false
	}
	n, err := strconv.Atoi(tag[1:])
	return n, err == nil
}

// checkName refuses a reference that carries a scheme or userinfo before the registry library
// sees it: its parse errors quote the input, and a user:token@host would end up in a message.
func checkName(s, want string) error {
	if strings.Contains(s, "://") || strings.Contains(s, "@") {
		return fmt.Errorf("invalid OCI reference: write %s, without a scheme or credentials (pass those in the options)", want)
	}
	return nil
}

func nameOptions(opts Options) []name.Option {
	o := []name.Option{name.StrictValidation}
	if opts.Insecure {
		o = append(o, name.Insecure)
	}
	return o
}

// parseRepository parses REGISTRY/REPO[/...] (no tag, no digest).
func parseRepository(s string, opts Options) (name.Repository, error) {
	if err := checkName(s, "REGISTRY/REPO/PKG"); err != nil {
		return name.Repository{}, err
	}
	repo, err := name.NewRepository(s, nameOptions(opts)...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("invalid OCI repository (want REGISTRY/REPO/PKG, lowercase): %w", err)
	}
	for _, seg := range strings.Split(repo.RepositoryStr(), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return name.Repository{}, fmt.Errorf("invalid OCI repository %s: empty, . and .. path elements are not names", s)
		}
	}
	return repo, nil
}

// parseTag parses REGISTRY/REPO/PKG:vN.
func parseTag(ref string, opts Options) (name.Tag, error) {
	const want = "REGISTRY/REPO/PKG:vN"
	if err := checkName(ref, want); err != nil {
		return name.Tag{}, err
	}
	// The tag follows the last ':' after the last '/' (a registry's port has a '/' after it).
	i := strings.LastIndex(ref, ":")
	if i < 0 || i < strings.LastIndex(ref, "/") {
		return name.Tag{}, fmt.Errorf("OCI reference %s has no tag: write %s, the package's next revision (e.g. %s:v1)", ref, want, ref)
	}
	tag := ref[i+1:]
	if _, ok := revisionNumber(tag); !ok {
		return name.Tag{}, fmt.Errorf("tag %q of %s is not a revision: write %s, N a whole number from 1 without leading zeros (e.g. %s:v1)",
			tag, ref[:i], want, ref[:i])
	}
	repo, err := parseRepository(ref[:i], opts)
	if err != nil {
		return name.Tag{}, err
	}
	return repo.Tag(tag), nil
}
