package acme

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/acme/acmetest"
	"github.com/edgeway/edgeway/internal/testutil"
	edgetls "github.com/edgeway/edgeway/tls"
)

// TestPebbleConcurrentDemandsShareOneOrder: against pebble, ten Obtain
// calls at once for one name (plus the name's own loop) make one order,
// and all see it succeed. Stop then leaves storage holding a matching pair.
func TestPebbleConcurrentDemandsShareOneOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var m *Manager
	ready := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready
		tok, _ := strings.CutPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		if ka, ok := m.HTTP01(tok); ok {
			w.Write([]byte(ka))
			return
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	p := acmetest.Start(t, acmetest.Options{HTTPPort: ln.Addr().(*net.TCPAddr).Port, TLSPort: testutil.FreePort(t)})

	storage, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store := edgetls.NewStore(nil)
	t.Cleanup(store.Close)
	var orders atomic.Int32
	m, err = New(Config{
		Directory: p.URL, AcceptTerms: true, Names: []string{"shared.example.test"},
		Challenges: []string{HTTP01}, HTTPClient: p.HTTPS, Storage: storage, Store: store,
		Observe: func(e Event) {
			if e.Kind == "order" {
				orders.Add(1)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	close(ready)
	m.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() { errs <- m.Obtain(ctx, "shared.example.test") })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Obtain: %v\npebble log:\n%s", err, p.Log())
		}
	}
	// The loop's own first order may run before or with the demands, and
	// demands that arrive after it finished start one more.
	if n := orders.Load(); n < 1 || n > 2 {
		t.Errorf("%d orders for 11 concurrent demands, want 1 (or 2 if demands came after the first ended)", n)
	}
	m.Stop()
	if c := m.loadStored(context.Background(), "shared.example.test"); c == nil {
		t.Fatal("after Stop, storage holds no usable certificate")
	}
	c, err := store.GetCertificate(&tls.ClientHelloInfo{ServerName: "shared.example.test"})
	if err != nil || c.Leaf.VerifyHostname("shared.example.test") != nil {
		t.Fatalf("the issued certificate is not served: %v", err)
	}
}
