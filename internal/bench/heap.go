package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/pprof/profile"
)

// heapProfile writes the controller's heap profile, taken after a forced GC, to
// Options.HeapProfile-name.pb.gz and returns its live heap (in-use bytes as the profile
// estimates them), when Options.HeapProfile is set; 0 otherwise.
func (b *run) heapProfile(ctx context.Context, name string) (int64, error) {
	if b.o.HeapProfile == "" {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	data, err := b.pprofGet(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, fmt.Errorf("heap profile of the controller: %w", err)
	}
	path := heapProfilePath(b.o.HeapProfile, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return 0, err
	}
	live, err := inUse(data)
	if err != nil {
		return 0, fmt.Errorf("heap profile of the controller: %w", err)
	}
	b.progressf("%s: controller live heap %s (heap profile %s)", name, mib(live), path)
	return live, nil
}

// heapProfilePath is where the heap profile of a phase goes.
func heapProfilePath(prefix, name string) string { return prefix + "-" + name + ".pb.gz" }

// inUse sums a heap profile's inuse_space samples: the bytes live at its last GC.
func inUse(data []byte) (int64, error) {
	p, err := profile.Parse(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	index := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			index = i
		}
	}
	if index < 0 {
		return 0, fmt.Errorf("no inuse_space in the heap profile")
	}
	var sum int64
	for _, s := range p.Sample {
		sum += s.Value[index]
	}
	return sum, nil
}
