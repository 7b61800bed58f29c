package acme

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	edgetls "github.com/edgeway/edgeway/tls"
)

// TestChallengesAnsweredByAnotherInstance: a challenge one manager
// presents is answered by another on the same storage (HTTP-01 key
// authorization and TLS-ALPN-01 certificate), until the first cleans up.
// The other has not been started: a daemon binds its listeners before it
// starts its manager, and a validation may reach it in between.
func TestChallengesAnsweredByAnotherInstance(t *testing.T) {
	t.Parallel()
	storage, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(start bool) (*Manager, *edgetls.Store) {
		store := edgetls.NewStore(nil)
		t.Cleanup(store.Close)
		m, err := New(Config{Directory: "https://127.0.0.1:1/dir", AcceptTerms: true, Storage: storage, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if start {
			m.Start()
		}
		t.Cleanup(m.Stop)
		return m, store
	}
	orderer, _ := mk(true)
	other, otherStore := mk(false)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	orderer.client.Key = key
	const token, name = "tok_EN-123abc", "alpn.example.test"
	ctx := context.Background()

	cleanHTTP, err := orderer.present(ctx, name, HTTP01, token)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := orderer.HTTP01(token)
	if got, ok := other.HTTP01(token); !ok || got != want || want == "" {
		t.Fatalf("the other instance answers %q, %v; want the orderer's %q", got, ok, want)
	}
	for _, bad := range []string{"../account.key", "a/b", ""} {
		if _, ok := other.HTTP01(bad); ok {
			t.Errorf("token %q answered", bad)
		}
	}
	cleanHTTP()
	if _, ok := other.HTTP01(token); ok {
		t.Error("the token is still answered after cleanup")
	}

	hello := &tls.ClientHelloInfo{ServerName: name, SupportedProtos: []string{"acme-tls/1"}}
	if _, err := otherStore.GetCertificate(hello); err == nil {
		t.Fatal("a challenge certificate before any was presented")
	}
	cleanALPN, err := orderer.present(ctx, name, TLSALPN01, token)
	if err != nil {
		t.Fatal(err)
	}
	c, err := otherStore.GetCertificate(hello)
	if err != nil || c.Leaf == nil && len(c.Certificate) == 0 {
		t.Fatalf("the other instance has no TLS-ALPN-01 certificate: %v", err)
	}
	cleanALPN()
	if _, err := otherStore.GetCertificate(hello); err == nil {
		t.Error("the TLS-ALPN-01 certificate is still served after cleanup")
	}
}

// TestChallengeLookupBounded: storage lookups for challenges this
// instance does not hold are capped per second, and a missing token is
// not read again at once (so a flood of made-up tokens costs the
// storage at most lookupRate reads a second).
func TestChallengeLookupBounded(t *testing.T) {
	t.Parallel()
	var g lookupGate
	now := time.Unix(1000, 0)
	n := 0
	for i := range 100 {
		if g.allow(fmt.Sprint("k", i), now) {
			n++
		}
	}
	if n != lookupRate {
		t.Fatalf("%d lookups allowed in one second, want %d", n, lookupRate)
	}
	later := now.Add(time.Second)
	if !g.allow("tok", later) {
		t.Fatal("no lookup allowed in the next second")
	}
	g.miss("tok", later)
	if g.allow("tok", later.Add(lookupNegative/2)) {
		t.Error("a token found missing is read again at once")
	}
	if !g.allow("tok", later.Add(lookupNegative)) {
		t.Error("a token found missing is never read again")
	}
}
