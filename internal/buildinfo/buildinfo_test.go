package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	module := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/flotilla-dev/flotilla", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		},
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	for _, tc := range []struct {
		name                  string
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  Info
	}{{
		name:    "stamped by the Makefile",
		version: "v1.3.0-2-gabcdef0", commit: "abcdef0abcdef0abcdef0abcdef0abcdef0abcd", date: "2026-02-03T04:05:06Z",
		bi:   module,
		want: Info{Version: "v1.3.0-2-gabcdef0", Commit: "abcdef0abcdef0abcdef0abcdef0abcdef0abcd", Date: "2026-02-03T04:05:06Z", GoVersion: "go1.26.0", Platform: platform},
	}, {
		name: "go install of a module, built from a checkout",
		bi:   module,
		want: Info{Version: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567", Date: "2026-01-02T03:04:05Z", GoVersion: "go1.26.0", Platform: platform},
	}, {
		name: "go install of a module from the proxy: no vcs settings",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}},
		want: Info{Version: "v1.2.3", Commit: Unknown, Date: Unknown, GoVersion: "go1.26.0", Platform: platform},
	}, {
		name: "go build -buildvcs=false in a checkout",
		bi:   &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}},
		want: Info{Version: "(devel)", Commit: Unknown, Date: Unknown, GoVersion: "go1.26.0", Platform: platform},
	}, {
		name: "no build information",
		want: Info{Version: Unknown, Commit: Unknown, Date: Unknown, GoVersion: runtime.Version(), Platform: platform},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Read(tc.version, tc.commit, tc.date, tc.bi)); diff != "" {
				t.Errorf("Read (-want +got):\n%s", diff)
			}
		})
	}
}
