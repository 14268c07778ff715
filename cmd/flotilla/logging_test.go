package main

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// countingObject counts how often it is encoded.
type countingObject struct{ encoded *atomic.Int32 }

func (o countingObject) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	o.encoded.Add(1)
	return enc.AddReflected("kind", "Repository")
}

// TestLoggerEncodesFieldsOnlyWhenWritten: the controller's logger (as runController builds it)
// encodes the values given to WithValues, chained ones too, when an entry is written, once, and
// not for an entry below the level or a logger never written to; the entry carries them all.
func TestLoggerEncodesFieldsOnlyWhenWritten(t *testing.T) {
	var buf bytes.Buffer
	var encoded atomic.Int32
	log := zap.New(zap.WriteTo(&buf), lazyFields())
	l := log.WithValues("object", countingObject{&encoded}).WithValues("reconcileID", "r1")
	l.V(1).Info("below the level")
	_ = log.WithValues("unused", countingObject{&encoded})
	if n := encoded.Load(); n != 0 || buf.Len() != 0 {
		t.Fatalf("before any entry was written: encoded %d times, wrote %q", n, buf.String())
	}
	l.Info("first")
	l.Info("second")
	if n := encoded.Load(); n != 1 {
		t.Fatalf("two entries encoded the logger's fields %d times, want once", n)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("wrote %d lines, want 2: %q", len(lines), buf.String())
	}
	for _, line := range lines {
		for _, want := range []string{`"object":{"kind":"Repository"}`, `"reconcileID":"r1"`} {
			if !strings.Contains(line, want) {
				t.Fatalf("entry %s lacks %s", line, want)
			}
		}
	}
}
