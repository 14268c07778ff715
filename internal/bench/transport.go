package bench

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/flotilla-dev/flotilla/internal/githttp"
)

// Transports the bench serves its repositories over.
const (
	// TransportHTTP serves every repository over git's smart HTTP protocol (git http-backend
	// behind the bench's own HTTP server), as a user's git server does: the default.
	TransportHTTP = "http"
	// TransportFile hands the controller file:// URLs (and --allow-local-repositories): git's
	// local transport, a git-upload-pack or git-receive-pack child per fetch or push.
	TransportFile = "file"
)

// serve starts the git server for the work directory when the transport is HTTP.
func (b *run) serve(log io.Writer) error {
	if b.o.Transport != TransportHTTP {
		return nil
	}
	srv, err := githttp.Serve(b.dir, log)
	if err != nil {
		return fmt.Errorf("start the git server: %w", err)
	}
	b.git = srv
	return nil
}

// url is the URL of the bare repository at dir (under the work directory) over the run's
// transport.
func (b *run) url(dir string) string {
	if b.git == nil {
		return "file://" + dir
	}
	rel, err := filepath.Rel(b.dir, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		panic(fmt.Sprintf("bench: repository %s is outside the work directory %s", dir, b.dir))
	}
	return b.git.URL + "/" + filepath.ToSlash(rel)
}

// requests sums what the git server counted for the repositories under dir (zero over file://).
func (b *run) requests(dir string) githttp.Requests {
	var sum githttp.Requests
	if b.git == nil {
		return sum
	}
	rel, err := filepath.Rel(b.dir, dir)
	if err != nil {
		return sum
	}
	prefix := filepath.ToSlash(rel)
	for repo, r := range b.git.Requests() {
		if repo == prefix || strings.HasPrefix(repo, prefix+"/") {
			sum = sum.Add(r)
		}
	}
	return sum
}

// requestsPer formats requests divided by n: "total (info/refs, upload-pack, receive-pack)".
func requestsPer(r githttp.Requests, n int) string {
	d := float64(max(n, 1))
	return fmt.Sprintf("%.2f (%.2f, %.2f, %.2f)", float64(r.Total())/d, float64(r.InfoRefs)/d, float64(r.UploadPack)/d, float64(r.ReceivePack)/d)
}
