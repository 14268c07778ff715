package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"sigs.k8s.io/yaml"
)

// checkOutput refuses an -o value the command cannot write.
func checkOutput(format string) error {
	switch format {
	case "", "table", "yaml", "json":
		return nil
	}
	return fmt.Errorf("-o %q: write table, yaml or json", format)
}

// writeStructured writes v as yaml or json.
func writeStructured(w io.Writer, format string, v any) error {
	var b []byte
	var err error
	if format == "json" {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// progress reports "N of M clusters" on w once a run takes longer than a few seconds, at most
// every few seconds, and a last line when a reported run ends.
func progress(w io.Writer, what string) func(done, total int) {
	var mu sync.Mutex
	start, last := time.Now(), time.Time{}
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if now.Sub(start) < 3*time.Second || (now.Sub(last) < 3*time.Second && done < total) {
			return
		}
		last = now
		fmt.Fprintf(w, "%s: %d of %d clusters (%s)\n", what, done, total, now.Sub(start).Round(time.Second))
	}
}
