package edgetls

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"
)

// capturedHellos returns real ClientHelloInfos, taken from handshakes with
// a modern client and with a TLS 1.2 RSA-only client.
func capturedHellos(t testing.TB, s *Store) (modern, rsaOnly *tls.ClientHelloInfo) {
	t.Helper()
	var mu sync.Mutex
	var got []*tls.ClientHelloInfo
	cfg, err := s.ServerConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
		mu.Lock()
		got = append(got, h)
		mu.Unlock()
		return s.GetCertificate(h)
	}
	srv := startServer(t, cfg)
	servedCN(t, srv.addr, "a.example.com", nil)
	servedCN(t, srv.addr, "a.example.com", &tls.Config{MaxVersion: tls.VersionTLS12,
		CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("captured %d hellos, want 2", len(got))
	}
	return got[0], got[1]
}

func withName(h *tls.ClientHelloInfo, name string) *tls.ClientHelloInfo {
	c := *h
	c.ServerName = name
	return &c
}

type selectCase struct {
	desc  string
	hello *tls.ClientHelloInfo
	want  string
}

func selectCases(t testing.TB) (*Store, []selectCase) {
	s, _ := selectionStore(t)
	modern, rsaOnly := capturedHellos(t, s)
	return s, []selectCase{
		{"exact", withName(modern, "first.test"), "first"},
		{"exact uppercase", withName(modern, "FIRST.TEST"), "first"},
		{"wildcard", withName(modern, "b.example.com"), "wild"},
		{"unknown name", withName(modern, "nowhere.test"), "default"},
		{"no SNI", withName(modern, ""), "default"},
		{"ECDSA and RSA, modern client", withName(modern, "a.example.com"), "a-ecdsa"},
		{"ECDSA and RSA, RSA-only client", withName(rsaOnly, "a.example.com"), "a-rsa"},
	}
}

func TestGetCertificateAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	s, cases := selectCases(t)
	for _, c := range cases {
		var got *tls.Certificate
		allocs := testing.AllocsPerRun(100, func() { got, _ = s.GetCertificate(c.hello) })
		if cn := got.Leaf.Subject.CommonName; cn != c.want {
			t.Errorf("%s: got %q, want %q", c.desc, cn, c.want)
		}
		t.Logf("%s: %.0f allocs", c.desc, allocs)
		// Choosing between certificates runs crypto/tls's
		// SupportsCertificate, which allocates; a single candidate must not.
		if allocs != 0 && !strings.HasPrefix(c.desc, "ECDSA and RSA") {
			t.Errorf("%s: %.0f allocations per call, want 0", c.desc, allocs)
		}
	}
}

func BenchmarkGetCertificate(b *testing.B) {
	s, cases := selectCases(b)
	for _, c := range cases {
		b.Run(c.desc, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetCertificate(c.hello); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
