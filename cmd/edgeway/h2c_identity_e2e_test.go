package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
)

// TestH2CUpstreamKeepsEachRequestsIdentity sends requests from many
// client addresses (127.0.0.2 ... 127.0.0.33), each with its own path and
// Host, over keep-alive HTTP/1.1 connections to an h2c pool whose server
// shares one HTTP/2 connection between them all. The server answers with
// the :path, :authority, X-Forwarded-For and Forwarded it received; every
// answer must be its own request's. (An outbound field that viewed a
// reused buffer was kept in the upstream connection's HPACK table: the
// server then decoded another request's path or address, and the encoder
// later panicked.)
func TestH2CUpstreamKeepsEachRequestsIdentity(t *testing.T) {
	var conns atomic.Int32
	up := &http.Server{
		Handler: h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s|%s|%s|%s", r.RequestURI, r.Host, r.Header.Get("X-Forwarded-For"), r.Header.Get("Forwarded"))
		}), &http2.Server{}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				conns.Add(1)
			}
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	t.Cleanup(func() { up.Close() })

	routes := fmt.Sprintf("upstream who {\n  server %s\n  protocol h2c\n}\nroute who {\n  match PathPrefix(`/`)\n  to who\n}\n", ln.Addr())
	p, base, _ := startEdgeway(t, "", map[string]string{"who.routes": routes})
	addr := base[len("http://"):]

	const clients, perClient = 32, 150
	var wg sync.WaitGroup
	var mismatches, failures atomic.Int32
	var firstBad atomic.Value
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := net.IPv4(127, 0, 0, byte(2+c))
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
				DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
					return d.DialContext(ctx, network, addr)
				},
				MaxIdleConnsPerHost: 1,
			}}
			defer hc.CloseIdleConnections()
			for i := range perClient {
				path := fmt.Sprintf("/client-%d/request-%d/%s", c, i, longTail(c, i))
				host := fmt.Sprintf("c%d.r%d.example.test", c, i%7)
				req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
				req.Host = host
				res, err := hc.Do(req)
				if err != nil {
					failures.Add(1)
					firstBad.CompareAndSwap(nil, err.Error())
					return // the process may be gone; later requests would say the same
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				want := fmt.Sprintf("%s|%s|%s|for=%s;host=%s;proto=http", path, host, src, src, host)
				if string(body) != want {
					mismatches.Add(1)
					firstBad.CompareAndSwap(nil, fmt.Sprintf("got %q, want %q", body, want))
				}
			}
		}()
	}
	wg.Wait()
	if p.Exited() {
		t.Errorf("edgeway exited during the run")
	}
	if m, f := mismatches.Load(), failures.Load(); m > 0 || f > 0 {
		t.Fatalf("%d of %d answers carried another request's identity, %d clients failed; first: %v",
			m, clients*perClient, f, firstBad.Load())
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("the upstream saw %d connections, want the one that all requests share", n)
	}
}

// longTail varies the path's length from request to request, so that a
// stale view of a reused buffer shows as a different path.
func longTail(c, i int) string {
	b := make([]byte, (c*7+i*13)%90)
	for j := range b {
		b[j] = 'a' + byte((c+i+j)%26)
	}
	return string(b)
}
