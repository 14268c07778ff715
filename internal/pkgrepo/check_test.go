package pkgrepo

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

// A push cut by its bound whose mirror could not take the push back says both: the bound, and
// that the mirror kept it.
func TestCheckKeepsForgetError(t *testing.T) {
	b := &answerBound{pack: 1 << 20}
	ep := endpoint{display: "https://git.example/fleet.git"}
	streamEnded := errors.New("unexpected EOF")
	if err := b.check("push", ep, streamEnded); err != nil {
		t.Fatalf("check before any cut = %v, want nil", err)
	}
	_ = b.cutPack()
	err := b.check("push", ep, errors.Join(streamEnded, &forgetError{fs.ErrPermission}))
	if !errors.Is(err, ErrAnswerTooLarge) || !errors.Is(err, fs.ErrPermission) ||
		!strings.Contains(err.Error(), "larger than 1Mi") || !strings.Contains(err.Error(), "could not forget the push: permission denied") {
		t.Fatalf("check = %v; want ErrAnswerTooLarge naming the bound, and the mirror's error", err)
	}
	if err := b.check("push", ep, streamEnded); !errors.Is(err, ErrAnswerTooLarge) || errors.Is(err, fs.ErrPermission) {
		t.Fatalf("check without a mirror error = %v; want ErrAnswerTooLarge alone", err)
	}
}
