package router

import (
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	etest "github.com/edgeway/edgeway/internal/testutil"
)

func TestXFCCValues(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"client.test":         "client.test",
		"spiffe://a/b":        "spiffe://a/b",
		"a,b;c=d":             `"a,b;c=d"`,
		`CN="x",O=a\b` + "\n": `"CN=\"x\",O=a\\b"`,
	} {
		if got := string(appendValue(nil, in)); got != want {
			t.Errorf("appendValue(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestCertIdentityOnce: a certificate's identity is made once and shared
// by every request that carries that certificate (one TLS connection's),
// another certificate gets its own, and the entry goes once the
// certificate is collected (its connection gone).
func TestCertIdentityOnce(t *testing.T) {
	t.Parallel()
	c1, c2 := certBenchCert(t), certBenchCert(t)
	a, b := certIdentityOf(c1), certIdentityOf(c1)
	if a != b {
		t.Fatal("the same certificate got two identities")
	}
	if certIdentityOf(c2) == a {
		t.Fatal("two certificates share an identity")
	}
	if a.rule.Subject != "CN=billing,OU=prod,O=Example" || len(a.rule.DNS) != 2 || len(a.rule.Others) != 2 ||
		!strings.HasPrefix(a.xfcc, "Hash=") || !strings.Contains(a.xfcc, `;Subject="CN=billing,OU=prod,O=Example";URI=spiffe://example.com/ns/prod/sa/billing;DNS=billing.prod.example.com;DNS=billing.example.com`) {
		t.Errorf("identity %+v, xfcc %s", a.rule, a.xfcc)
	}
	k := weak.Make(c2)
	runtime.KeepAlive(c2)
	c2 = nil
	etest.Eventually(t, 30*time.Second, func() bool {
		runtime.GC()
		_, ok := certIdentities.Load(k)
		return !ok
	}, "the identity of a collected certificate is still kept")
	runtime.KeepAlive(c1)
}
