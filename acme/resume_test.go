package acme

import (
	"context"
	"crypto/tls"
	"errors"
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

// TestPebbleResumeJournaledOrder: a manager is abandoned while pebble
// validates its HTTP-01 challenge (the validation request held); a new
// manager on the same storage, as the instance that takes over after a
// crash would, resumes the journaled order: pebble sees one order, the
// held validation is answered by the new manager, and its certificate
// is served and stored, the journal gone.
func TestPebbleResumeJournaledOrder(t *testing.T) {
	const name = "resume.example.test"
	var cur atomic.Pointer[Manager]
	validating := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.URL.Path, "/.well-known/acme-challenge/")
		once.Do(func() { close(validating) })
		<-release
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if ka, ok := cur.Load().HTTP01(tok); ok {
				w.Write([]byte(ka))
				return
			}
		}
		http.NotFound(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(releaseOnce(release)); srv.Close() })
	p := acmetest.Start(t, acmetest.Options{HTTPPort: ln.Addr().(*net.TCPAddr).Port, TLSPort: testutil.FreePort(t)})
	storage, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	events := map[string]int{}
	newManager := func() (*Manager, *edgetls.Store) {
		store := edgetls.NewStore(nil)
		t.Cleanup(store.Close)
		m, err := New(Config{
			Directory: p.URL, AcceptTerms: true, Names: []string{name}, Challenges: []string{HTTP01},
			HTTPClient: p.HTTPS, Storage: storage, Store: store,
			Observe: func(e Event) { mu.Lock(); events[e.Kind]++; mu.Unlock() },
		})
		if err != nil {
			t.Fatal(err)
		}
		return m, store
	}
	m1, _ := newManager()
	cur.Store(m1)
	m1.Start()
	select {
	case <-validating:
	case <-time.After(60 * time.Second):
		m1.Stop()
		t.Fatalf("pebble never validated the first manager's challenge; its log:\n%s", p.Log())
	}
	j, err := m1.readJournal(context.Background(), name)
	if err != nil || j.OrderURL == "" || j.Stage != stageCreated {
		t.Fatalf("no order journal while the challenge is validated: %+v, %v", j, err)
	}
	m1.Stop() // as a crash would, the order is left in the middle
	if _, err := m1.readJournal(context.Background(), name); err != nil {
		t.Fatalf("the journal is gone after the abandon: %v", err)
	}

	m2, store2 := newManager()
	cur.Store(m2)
	m2.Start()
	t.Cleanup(m2.Stop)
	close(releaseOnce(release))
	testutil.Eventually(t, 90*time.Second, func() bool {
		c, err := store2.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		return err == nil && c.Leaf != nil && c.Leaf.VerifyHostname(name) == nil && c.Leaf.Issuer.CommonName != ""
	}, "the second manager serves no certificate; pebble log:\n%s", p.Log())
	mu.Lock()
	got := map[string]int{"order": events["order"], "resume": events["resume"]}
	mu.Unlock()
	if got["order"] != 1 || got["resume"] != 1 {
		t.Errorf("events %v, want one order (the first manager's) and one resume (the second's)", got)
	}
	if n := pebbleOrders(p); n != 1 {
		t.Errorf("pebble received %d new orders, want 1 (the journaled order resumed)\n%s", n, p.Log())
	}
	if _, err := m2.readJournal(context.Background(), name); !errors.Is(err, ErrNotExist) {
		t.Errorf("the journal is left after the certificate was stored: %v", err)
	}
	if c := m2.loadStored(context.Background(), name); c == nil {
		t.Error("storage holds no usable certificate")
	}
}

// releaseOnce returns ch, or a fresh channel once ch is closed, so that
// the test and its cleanup can both close "the" release channel.
func releaseOnce(ch chan struct{}) chan struct{} {
	select {
	case <-ch:
		return make(chan struct{})
	default:
		return ch
	}
}

// pebbleOrders counts the new orders pebble's log records.
func pebbleOrders(p *acmetest.Pebble) int {
	return strings.Count(p.Log(), "POST /order-plz")
}
