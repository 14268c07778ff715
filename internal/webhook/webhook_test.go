package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
)

func sign(token, body string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestVerify(t *testing.T) {
	const token, body = "s3cret", `{"ref":"refs/tags/upf/v2"}`
	good := sign(token, body)
	tests := []struct {
		name   string
		header map[string]string
		want   error
	}{
		{"github", map[string]string{"X-Hub-Signature-256": "sha256=" + good}, nil},
		{"gitea", map[string]string{"X-Gitea-Signature": good}, nil},
		{"gitlab", map[string]string{"X-Gitlab-Token": token}, nil},
		{"generic", map[string]string{"X-Signature-256": "sha256=" + good}, nil},
		{"unsigned", map[string]string{}, errUnsigned},
		{"github forged", map[string]string{"X-Hub-Signature-256": "sha256=" + sign("guess", body)}, errForged},
		{"github without prefix", map[string]string{"X-Hub-Signature-256": good}, errForged},
		{"gitea not hex", map[string]string{"X-Gitea-Signature": "zz"}, errForged},
		{"gitlab wrong token", map[string]string{"X-Gitlab-Token": "s3cre"}, errForged},
		{"generic of another body", map[string]string{"X-Signature-256": "sha256=" + sign(token, body+" ")}, errForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if err := Verify(h, []byte(body), []byte(token)); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}
