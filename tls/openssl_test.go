package edgetls

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// These tests run the openssl command line client as a second, independent
// TLS implementation. They skip only where openssl is not installed.

var subjectCN = regexp.MustCompile(`(?m)^subject=.*CN ?= ?([^,/\n]+)`)

func opensslClient(t *testing.T, addr string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"s_client", "-connect", addr}, args...)...)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("openssl s_client %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestOpenSSLSelection(t *testing.T) {
	s, _ := selectionStore(t)
	srv := serverFor(t, s, nil)
	tests := []struct {
		desc string
		args []string
		want string
	}{
		{"exact", []string{"-servername", "a.example.com"}, "a-ecdsa"},
		{"uppercase wildcard", []string{"-servername", "B.EXAMPLE.COM"}, "wild"},
		{"no SNI", []string{"-noservername"}, "default"},
		{"TLS 1.2 RSA suites", []string{"-servername", "a.example.com", "-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"}, "a-rsa"},
		{"TLS 1.3 RSA signatures only", []string{"-servername", "a.example.com", "-tls1_3", "-sigalgs", "rsa_pss_rsae_sha256:rsa_pkcs1_sha256"}, "a-rsa"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			out := opensslClient(t, srv.addr, tt.args...)
			m := subjectCN.FindStringSubmatch(out)
			if m == nil || strings.TrimSpace(m[1]) != tt.want {
				t.Errorf("served %v, want CN %q\n%s", m, tt.want, out)
			}
		})
	}
}

func TestOpenSSLStatusRequest(t *testing.T) {
	o := newOCSPSetup(t, "good", time.Hour)
	o.waitStaple(t, "a staple", hasStaple)
	out := opensslClient(t, o.srv.addr, "-servername", "o.test", "-status")
	if !strings.Contains(out, "OCSP Response Status: successful") || !strings.Contains(out, "Cert Status: good") {
		t.Errorf("openssl saw no good OCSP staple:\n%s", out)
	}
}
