package acme

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
	edgetls "github.com/edgeway/edgeway/tls"
)

// caURL is where fakeCA answers; no socket behind it.
const caURL = "https://ca.example.test"

// fakeCA is an in-memory ACME server, its RoundTrip the client's
// transport (no sockets, so that a test can run in a synctest bubble).
// It registers any account and answers every new order with a rate
// limit (429, rateLimited, Retry-After: 3600); orders counts them.
type fakeCA struct {
	mux    *http.ServeMux
	nonces atomic.Int64
	orders atomic.Int32
}

func newFakeCA() *fakeCA {
	ca := &fakeCA{mux: http.NewServeMux()}
	nonce := func(w http.ResponseWriter) { w.Header().Set("Replay-Nonce", fmt.Sprint(ca.nonces.Add(1))) }
	ca.mux.HandleFunc("/dir", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"newNonce": caURL + "/nonce", "newAccount": caURL + "/acct", "newOrder": caURL + "/order"})
	})
	ca.mux.HandleFunc("/nonce", func(w http.ResponseWriter, r *http.Request) { nonce(w); w.WriteHeader(http.StatusNoContent) })
	ca.mux.HandleFunc("/acct", func(w http.ResponseWriter, r *http.Request) {
		nonce(w)
		w.Header().Set("Location", caURL+"/acct/1")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"status":"valid"}`))
	})
	ca.mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		ca.orders.Add(1)
		nonce(w)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many certificates"}`))
	})
	return ca
}

func (ca *fakeCA) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ca.mux.ServeHTTP(rec, r)
	if r.Body != nil {
		r.Body.Close()
	}
	res := rec.Result()
	res.Request = r
	return res, nil
}

// TestRateLimitedRenewalKeepsServing: a stored certificate that is due is
// served at start; its renewal is rate limited; the failure is reported
// with its reason, the next attempt waits for the CA's Retry-After, and
// the stored certificate stays served. Virtual time: the renewal
// schedule is checked to the instant.
func TestRateLimitedRenewalKeepsServing(t *testing.T) {
	synctest.Test(t, testRateLimitedRenewal)
}

func testRateLimitedRenewal(t *testing.T) {
	ca := newFakeCA()
	dir := caURL + "/dir"
	storage, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dir)
	old := testutil.NewCA(t, "old CA")
	certPEM, keyPEM := old.Issue(t, testutil.IssueOptions{}, "rl.example.test")
	ctx := context.Background()
	storage.Put(ctx, storagePrefix(u)+"/certs/rl.example.test.crt", certPEM)
	storage.Put(ctx, storagePrefix(u)+"/certs/rl.example.test.key", keyPEM)
	// testutil certificates live 24h from now (and began an hour ago):
	// 23h on, one is due (under a third of its life left).
	time.Sleep(23 * time.Hour)

	store := edgetls.NewStore(nil)
	t.Cleanup(store.Close)
	events := make(chan Event, 16)
	m, err := New(Config{
		Directory: dir, AcceptTerms: true, Names: []string{"rl.example.test"},
		HTTPClient: &http.Client{Transport: ca}, Storage: storage, Store: store,
		Observe: func(e Event) { events <- e },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	served := func() *tls.Certificate {
		c, err := store.GetCertificate(&tls.ClientHelloInfo{ServerName: "rl.example.test"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := served()
	failure := func() {
		t.Helper()
		for e := range events { // a bubble that blocks here for good fails the test
			if e.Kind != "failure" {
				continue
			}
			if e.Reason != ReasonRateLimited {
				t.Fatalf("failure reason %q (%v), want rate_limited", e.Reason, e.Err)
			}
			return
		}
	}
	failure()
	synctest.Wait() // the loop has recorded the status and sleeps
	now := time.Now()
	st := store.RenewalStatuses()["rl.example.test"]
	if st.Reason != ReasonRateLimited {
		t.Fatalf("renewal status %+v, want the rate limit recorded", st)
	}
	if wait := st.NextAttempt.Sub(now); wait < time.Hour {
		t.Errorf("next attempt in %v, want at least the Retry-After of 1h", wait)
	}
	if st.Failures != 1 || st.LastError == "" {
		t.Errorf("status = %+v", st)
	}
	if c := served(); !c.Leaf.Equal(first.Leaf) {
		t.Error("a different certificate is served after the failed renewal")
	}
	list := store.List()
	if len(list) != 1 || list[0].Renewal == nil || list[0].Renewal.Reason != ReasonRateLimited {
		t.Errorf("List does not show the failed renewal: %+v", list)
	}

	// The next order goes out at NextAttempt, not an instant before.
	time.Sleep(st.NextAttempt.Sub(now) - time.Nanosecond)
	synctest.Wait()
	if n := ca.orders.Load(); n != 1 {
		t.Fatalf("%d orders before the next attempt, want 1", n)
	}
	time.Sleep(time.Nanosecond)
	failure()
	if n := ca.orders.Load(); n != 2 {
		t.Errorf("%d orders at the next attempt, want 2", n)
	}
}

func TestObtainUnknownName(t *testing.T) {
	t.Parallel()
	storage, _ := NewDir(t.TempDir())
	store := edgetls.NewStore(nil)
	t.Cleanup(store.Close)
	m, err := New(Config{Directory: "https://127.0.0.1:1/dir", AcceptTerms: true, Storage: storage, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	if err := m.Obtain(context.Background(), "any.example.test"); err == nil {
		t.Fatal("Obtain ordered a name that is not configured")
	}
}
