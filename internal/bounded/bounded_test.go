package bounded

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	errCut := errors.New("cut")
	for _, tc := range []struct {
		limit int64
		in    string
		want  string
		err   error
	}{
		{limit: 3, in: "abc", want: "abc"},
		{limit: 4, in: "abc", want: "abc"},
		{limit: 2, in: "abc", want: "ab", err: errCut},
		{limit: 0, in: "", want: ""},
		{limit: 0, in: "a", want: "", err: errCut},
	} {
		cuts := 0
		// One byte a read: the bound falls between reads as well as inside one.
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(tc.in), "bytewise": iotest.OneByteReader(strings.NewReader(tc.in))} {
			cuts = 0
			b := NewReader(r, tc.limit, func() error { cuts++; return errCut })
			got, err := io.ReadAll(b)
			if string(got) != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("%s, limit %d of %q: read %q, %v; want %q, %v", name, tc.limit, tc.in, got, err, tc.want, tc.err)
			}
			if _, again := b.Read(make([]byte, 1)); tc.err != nil && (!errors.Is(again, errCut) || cuts != 1) {
				t.Errorf("%s, limit %d of %q: the read after the cut = %v, cut called %d times; want the cut's error, once", name, tc.limit, tc.in, again, cuts)
			}
		}
	}
}

func TestRaise(t *testing.T) {
	b := NewReader(strings.NewReader("abcdef"), 2, func() error { return errors.New("cut") })
	p := make([]byte, 2)
	if n, err := io.ReadFull(b, p); n != 2 || err != nil {
		t.Fatalf("read %d, %v", n, err)
	}
	b.Raise(4)
	if got, err := io.ReadAll(b); string(got) != "cdef" || err != nil {
		t.Fatalf("after Raise(4): read %q, %v; want cdef", got, err)
	}
}

func TestErrorPage(t *testing.T) {
	page := strings.Repeat("x", 2*ErrorPageBytes)
	for _, tc := range []struct {
		status int
		want   int
	}{{200, len(page)}, {204, len(page)}, {302, ErrorPageBytes}, {404, ErrorPageBytes}, {500, ErrorPageBytes}} {
		res := &http.Response{StatusCode: tc.status, Body: io.NopCloser(strings.NewReader(page))}
		cut := ErrorPage(res, ErrorPageBytes)
		got, err := io.ReadAll(res.Body)
		if len(got) != tc.want || err != nil || cut != (tc.want != len(page)) {
			t.Errorf("status %d: ErrorPage = %v, then read %d bytes, %v; want %d bytes", tc.status, cut, len(got), err, tc.want)
		}
	}
}
