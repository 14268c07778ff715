package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// checkOutput refuses an -o value the command cannot write.
func checkOutput(format string) error {
	switch format {
	case "", "table", "yaml", "json":
		return nil
	}
	return cannotRun(fmt.Errorf("-o %q: write table, yaml or json", format))
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

// yamlDocsToList is a YAML stream of objects as a v1 List.
func yamlDocsToList(b []byte) (map[string]any, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	items := []any{}
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, nil
		}
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			items = append(items, obj)
		}
	}
}
