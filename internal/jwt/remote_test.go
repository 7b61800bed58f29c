package jwt

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// jwksServer serves a key set document that a test can change, fail or
// hold, and counts the fetches.
type jwksServer struct {
	*httptest.Server
	doc     atomic.Pointer[string] // nil: answer 500
	fetches atomic.Int64
	hold    atomic.Pointer[chan struct{}] // when set, each fetch waits for it to close
}

func newJWKSServer(t *testing.T, doc string) *jwksServer {
	s := &jwksServer{}
	s.doc.Store(&doc)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		if h := s.hold.Load(); h != nil {
			<-*h
		}
		d := s.doc.Load()
		if d == nil {
			http.Error(w, "down", 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(*d))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) serve(doc string) { s.doc.Store(&doc) }

func startRemote(t *testing.T, r *Remote) *Remote {
	r.Start()
	t.Cleanup(r.Stop)
	testutil.WaitFor(t, "the first key set", func() bool { return r.Keys() != nil })
	return r
}

func claimsFor(sub string) map[string]any {
	return map[string]any{"sub": sub, "exp": time.Now().Add(time.Hour).Unix()}
}

// check checks token as a request does: against the set held, and on an
// unknown key once more after Refetch.
func check(r *Remote, token string) error {
	_, err := r.Keys().Verify(token, time.Now(), 0, "", "")
	if errors.Is(err, ErrUnknownKey) && r.Refetch(context.Background()) {
		_, err = r.Keys().Verify(token, time.Now(), 0, "", "")
	}
	return err
}

// TestRemoteRotation: a token of a key the URL adds works once a refetch
// has seen it, old keys' tokens keep working while the set holds them,
// and stop when it drops them.
func TestRemoteRotation(t *testing.T) {
	t.Parallel()
	a, b := testutil.NewJWTKey("a"), testutil.NewJWTKey("b")
	srv := newJWKSServer(t, testutil.JWKS(a))
	r := startRemote(t, &Remote{URL: srv.URL, Refresh: time.Hour, MinGap: 20 * time.Millisecond})
	ta, tb := a.Sign(claimsFor("alice")), b.Sign(claimsFor("bob"))
	if err := check(r, ta); err != nil {
		t.Fatalf("token of key a: %v", err)
	}
	srv.serve(testutil.JWKS(a, b))
	testutil.WaitFor(t, "key b's token accepted", func() bool { return check(r, tb) == nil })
	if err := check(r, ta); err != nil {
		t.Errorf("key a, still in the set: %v", err)
	}
	srv.serve(testutil.JWKS(b))
	// A dropped key is seen at the next fetch (here asked for; the
	// background refresh in service).
	testutil.WaitFor(t, "key a's token refused", func() bool {
		r.Refetch(context.Background())
		return errors.Is(check(r, ta), ErrUnknownKey)
	})
	if err := check(r, tb); err != nil {
		t.Errorf("key b after a was dropped: %v", err)
	}
}

// TestRemoteNoRefetchStorm: tokens naming keys the set lacks start at
// most one fetch per MinGap, and callers arriving during a fetch share it.
func TestRemoteNoRefetchStorm(t *testing.T) {
	t.Parallel()
	a := testutil.NewJWTKey("a")
	srv := newJWKSServer(t, testutil.JWKS(a))
	r := startRemote(t, &Remote{URL: srv.URL, Refresh: time.Hour, MinGap: time.Hour})
	for i := range 200 {
		if err := check(r, a.SignAs("forged", claimsFor("x"))); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("forged kid %d: %v, want ErrUnknownKey", i, err)
		}
	}
	if n := srv.fetches.Load(); n != 1 {
		t.Errorf("200 forged kids inside MinGap: %d fetches, want only the first one", n)
	}

	hold := make(chan struct{})
	held := newJWKSServer(t, testutil.JWKS(a))
	r2 := startRemote(t, &Remote{URL: held.URL, Refresh: time.Hour, MinGap: time.Nanosecond})
	held.hold.Store(&hold) // from the next fetch on
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { r2.Refetch(context.Background()) })
	}
	testutil.WaitFor(t, "the refetch to reach the server", func() bool { return held.fetches.Load() == 2 })
	close(hold)
	wg.Wait()
	if n := held.fetches.Load(); n > 3 {
		// 2: the first and the one shared; a caller scheduled after it
		// ended may start one more.
		t.Errorf("20 concurrent refetches: %d fetches, want them to share one", n-1)
	}
}

// TestRemoteKeepsLastGood: a URL that fails or serves garbage leaves the
// last good set in use, and the failures are counted.
func TestRemoteKeepsLastGood(t *testing.T) {
	t.Parallel()
	a := testutil.NewJWTKey("a")
	srv := newJWKSServer(t, testutil.JWKS(a))
	r := startRemote(t, &Remote{URL: srv.URL, Refresh: time.Hour, MinGap: time.Millisecond})
	ta := a.Sign(claimsFor("alice"))
	for _, bad := range []*string{nil, ptr(`{"keys":"nope"}`), ptr(`<html>`)} {
		srv.doc.Store(bad)
		_, before := r.Stats()
		testutil.WaitFor(t, "a failed fetch", func() bool {
			r.Refetch(context.Background())
			_, failed := r.Stats()
			return failed > before
		})
		if err := check(r, ta); err != nil {
			t.Errorf("after a failed fetch: %v; want the last good set kept", err)
		}
	}
	if ok, _ := r.Stats(); ok != 1 {
		t.Errorf("%d good fetches, want 1", ok)
	}
}

// TestRemoteBackground: without a token asking, the set is fetched again
// after Refresh.
func TestRemoteBackground(t *testing.T) {
	t.Parallel()
	a, b := testutil.NewJWTKey("a"), testutil.NewJWTKey("b")
	srv := newJWKSServer(t, testutil.JWKS(a))
	r := startRemote(t, &Remote{URL: srv.URL, Refresh: 50 * time.Millisecond, MinGap: time.Hour})
	srv.serve(testutil.JWKS(b))
	tb := b.Sign(claimsFor("bob"))
	testutil.WaitFor(t, "the background refresh", func() bool {
		_, err := r.Keys().Verify(tb, time.Now(), 0, "", "")
		return err == nil
	})
}

func ptr(s string) *string { return &s }

func TestLifetime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		desc          string
		header        []string
		refresh, want time.Duration
	}{
		{"no header: refresh", nil, 5 * time.Minute, 5 * time.Minute},
		{"max-age honoured", []string{"public, max-age=600"}, 5 * time.Minute, 10 * time.Minute},
		{"max-age quoted, upper case", []string{`MAX-AGE="120"`}, 5 * time.Minute, 2 * time.Minute},
		{"max-age below a minute", []string{"max-age=5"}, 5 * time.Minute, time.Minute},
		{"a short refresh lowers the floor", []string{"max-age=0"}, 2 * time.Second, 2 * time.Second},
		{"no-store", []string{"no-store"}, 5 * time.Minute, time.Minute},
		{"a day at most", []string{"max-age=99999999999"}, 5 * time.Minute, 24 * time.Hour},
		{"garbage ignored", []string{"max-age=soon"}, 5 * time.Minute, 5 * time.Minute},
		{"second field", []string{"public", "max-age=300"}, time.Minute, 5 * time.Minute},
	} {
		if got := lifetime(maxAgeOf(c.header), c.refresh); got != c.want {
			t.Errorf("%s: %v, want %v", c.desc, got, c.want)
		}
	}
}
