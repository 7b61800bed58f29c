package acme

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
	edgetls "github.com/edgeway/edgeway/tls"
)

// fakeCA is an ACME server that registers any account and answers every
// new order with a rate limit (429, rateLimited, Retry-After: 3600).
func fakeCA(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	var base string
	nonce := func(w http.ResponseWriter) { w.Header().Set("Replay-Nonce", fmt.Sprint(time.Now().UnixNano())) }
	mux.HandleFunc("/dir", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"newNonce": base + "/nonce", "newAccount": base + "/acct", "newOrder": base + "/order"})
	})
	mux.HandleFunc("/nonce", func(w http.ResponseWriter, r *http.Request) { nonce(w); w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/acct", func(w http.ResponseWriter, r *http.Request) {
		nonce(w)
		w.Header().Set("Location", base+"/acct/1")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"status":"valid"}`))
	})
	mux.HandleFunc("/order", func(w http.ResponseWriter, r *http.Request) {
		nonce(w)
		w.Header().Set("Content-Type", "application/problem+json")
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"type":"urn:ietf:params:acme:error:rateLimited","detail":"too many certificates"}`))
	})
	srv := httptest.NewTLSServer(mux)
	base = srv.URL
	t.Cleanup(srv.Close)
	return srv
}

// TestRateLimitedRenewalKeepsServing: a stored certificate that is due is
// served at start; its renewal is rate limited; the failure is reported
// with its reason, the next attempt waits for the CA's Retry-After, and
// the stored certificate stays served.
func TestRateLimitedRenewalKeepsServing(t *testing.T) {
	ca := fakeCA(t)
	dir := ca.URL + "/dir"
	storage, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dir)
	// A certificate with 2h of life and 1h left: due (a third left).
	old := testutil.NewCA(t, "old CA")
	certPEM, keyPEM := old.Issue(t, testutil.IssueOptions{}, "rl.example.test")
	ctx := context.Background()
	storage.Put(ctx, storagePrefix(u)+"/certs/rl.example.test.crt", certPEM)
	storage.Put(ctx, storagePrefix(u)+"/certs/rl.example.test.key", keyPEM)

	store := edgetls.NewStore(nil)
	t.Cleanup(store.Close)
	events := make(chan Event, 16)
	now := time.Now().Add(23 * time.Hour) // testutil certificates live 24h
	m, err := New(Config{
		Directory: dir, AcceptTerms: true, Names: []string{"rl.example.test"},
		HTTPClient: ca.Client(), Storage: storage, Store: store,
		Now:     func() time.Time { return now },
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
	for {
		select {
		case e := <-events:
			if e.Kind != "failure" {
				continue
			}
			if e.Reason != ReasonRateLimited {
				t.Fatalf("failure reason %q (%v), want rate_limited", e.Reason, e.Err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no failure reported")
		}
		break
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return store.RenewalStatuses()["rl.example.test"].Reason == ReasonRateLimited
	}, "renewal status not recorded")
	st := store.RenewalStatuses()["rl.example.test"]
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
