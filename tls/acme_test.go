package edgetls

import (
	"crypto/tls"
	"errors"
	"testing"
	"time"
)

// TestChallengeCertificate: a hello offering exactly acme-tls/1 gets the
// challenge certificate of its name (never a served one), and every other
// hello gets the served certificate (never a challenge one).
func TestChallengeCertificate(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "ca")
	s, _ := newTestStore(t)
	served := ca.issue(t, leafOpts{cn: "served", names: []string{"a.example.test"}})
	if err := s.Put(SourceACME, served); err != nil {
		t.Fatal(err)
	}
	chal := ca.issue(t, leafOpts{cn: "challenge", names: []string{"a.example.test"}})
	s.SetChallenge("A.example.test", chal)
	for _, tc := range []struct {
		desc   string
		sni    string
		protos []string
		want   string // CN, or "" for ErrNoChallenge
	}{
		{desc: "validation hello", sni: "a.example.test", protos: []string{"acme-tls/1"}, want: "challenge"},
		{desc: "client offering acme-tls/1 among others", sni: "a.example.test", protos: []string{"h2", "acme-tls/1"}, want: "served"},
		{desc: "plain client", sni: "a.example.test", want: "served"},
		{desc: "validation hello for a name without challenge", sni: "b.example.test", protos: []string{"acme-tls/1"}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			c, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: tc.sni, SupportedProtos: tc.protos})
			if tc.want == "" {
				if !errors.Is(err, ErrNoChallenge) {
					t.Fatalf("got %v, want ErrNoChallenge", err)
				}
				return
			}
			if err != nil || c.Leaf.Subject.CommonName != tc.want {
				t.Fatalf("got %v (%v), want %s", c, err, tc.want)
			}
		})
	}
	s.SetChallenge("a.example.test", nil)
	if _, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: "a.example.test", SupportedProtos: []string{"acme-tls/1"}}); !errors.Is(err, ErrNoChallenge) {
		t.Fatalf("after removal: %v, want ErrNoChallenge", err)
	}
}

func TestRenewalStatusInList(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t, "ca")
	s, _ := newTestStore(t)
	if err := s.Put(SourceACME, ca.issue(t, leafOpts{cn: "x", names: []string{"a.example.test"}})); err != nil {
		t.Fatal(err)
	}
	next := time.Now().Add(time.Hour).Truncate(time.Second)
	s.SetRenewalStatus("a.example.test", RenewalStatus{NextAttempt: next, Reason: "rate_limited", Failures: 2})
	list := s.List()
	if len(list) != 1 || list[0].Renewal == nil || list[0].Renewal.Reason != "rate_limited" || !list[0].Renewal.NextAttempt.Equal(next) {
		t.Fatalf("List = %+v", list)
	}
}
