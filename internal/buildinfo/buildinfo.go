// Package buildinfo is flotilla's version, commit and build date: stamped by `make build` and
// `make image` from git (-ldflags -X), else read from the module's build information, so a
// `go install` of a released module still reports its version.
package buildinfo

import (
	"cmp"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X github.com/flotilla-dev/flotilla/internal/buildinfo.version=v1.2.3 ...";
// the Makefile's LDFLAGS does.
var (
	version string
	commit  string
	date    string
)

// Info says which flotilla this is.
type Info struct {
	// Version is the release version (git describe), or the module's version.
	Version string `json:"version"`
	// Commit is the full commit id it was built from.
	Commit string `json:"commit"`
	// Date is the commit's date, RFC 3339 in UTC: builds of one commit are identical.
	Date string `json:"date"`
	// GoVersion is the Go release that built it.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Unknown stands for what neither the stamp nor the build information says.
const Unknown = "unknown"

// Get is this binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return Read(version, commit, date, bi)
}

// Read is the Info of stamped values over build information (nil when there is none): a stamp
// wins, then the module's version and the vcs.revision and vcs.time that go build records from a
// checkout.
func Read(version, commit, date string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, Commit: commit, Date: date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		// "(devel)" when built from a checkout without version control information.
		info.Version = cmp.Or(info.Version, bi.Main.Version)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = cmp.Or(info.Commit, s.Value)
			case "vcs.time":
				info.Date = cmp.Or(info.Date, s.Value)
			}
		}
		info.GoVersion = cmp.Or(bi.GoVersion, info.GoVersion)
	}
	info.Version = cmp.Or(info.Version, Unknown)
	info.Commit = cmp.Or(info.Commit, Unknown)
	info.Date = cmp.Or(info.Date, Unknown)
	return info
}
