package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestH3BufferedBodyCut: over HTTP/3, with a listener's defaults (no
// body_timeout or body_min_rate line), an upload that trickles below
// 500 bytes a second and one that stalls are both answered 408, and the
// upstream never sees a connection for either: the body was being
// buffered, and the request was never forwarded.
func TestH3BufferedBodyCut(t *testing.T) {
	up := newBodySink(t)
	ca := testutil.NewCA(t, "h3 buffering CA")
	routes := fmt.Sprintf("upstream sink { server %s }\nroute r {\n  match PathPrefix(`/`)\n  listeners websecure\n  to sink\n}\n", hostPort(up.Server))
	_, base := p2H3Site(t, ca, "", routes)
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "site.test"}}
	t.Cleanup(func() { tr.Close() })

	for _, tc := range []struct {
		desc  string
		every time.Duration // between 4-byte writes; 0: none after the first
		least time.Duration // the earliest the cut may come
	}{
		{desc: "trickle under body_min_rate", every: 500 * time.Millisecond, least: 9 * time.Second},
		{desc: "stall past body_timeout", least: 9 * time.Second},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.CloseWithError(io.ErrClosedPipe) })
			go func() {
				if _, err := io.WriteString(pw, "abcd"); err != nil || tc.every == 0 {
					return
				}
				tick := time.NewTicker(tc.every) // pacing the sender, not waiting for an event
				defer tick.Stop()
				for range tick.C {
					if _, err := io.WriteString(pw, "abcd"); err != nil {
						return
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/up", pr)
			req.Host = "site.test"
			req.ContentLength = 1_000_000
			start := time.Now()
			res, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("POST over HTTP/3: %v", err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			took := time.Since(start)
			if res.StatusCode != http.StatusRequestTimeout {
				t.Errorf("status %d after %v, want 408", res.StatusCode, took)
			}
			if took < tc.least {
				t.Errorf("cut after %v, before the %v the defaults allow", took, tc.least)
			}
		})
	}
	t.Cleanup(func() {
		if n := up.conns.Load(); n != 0 {
			t.Errorf("the upstream accepted %d connections for bodies still being sent, want 0", n)
		}
	})
}
