package edgetls

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
)

func ticketStore(t *testing.T, tickets bool, rotation time.Duration) (*Store, *testServer) {
	t.Helper()
	s, _ := newTestStore(t)
	err := s.Load(&conf.TLSStore{SelfSigned: []string{"t.test"}, SessionTickets: tickets, TicketRotation: rotation})
	if err != nil {
		t.Fatal(err)
	}
	return s, serverFor(t, s, nil)
}

// resumes handshakes twice with one session cache, rotating the ticket
// keys n times in between, and reports whether the second resumed.
func resumes(t *testing.T, s *Store, addr string, version uint16, rotations int) bool {
	t.Helper()
	cfg := &tls.Config{ServerName: "t.test", InsecureSkipVerify: true, MaxVersion: version,
		ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	cs, err := handshake(t, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cs.DidResume {
		t.Fatal("first handshake resumed")
	}
	for range rotations {
		s.tickets.rotate()
	}
	cs, err = handshake(t, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs.DidResume
}

func TestSessionTicketRotation(t *testing.T) {
	s, srv := ticketStore(t, true, time.Hour)
	tests := []struct {
		desc      string
		version   uint16
		rotations int
		want      bool
	}{
		{"TLS 1.3 no rotation", tls.VersionTLS13, 0, true},
		{"TLS 1.3 one rotation", tls.VersionTLS13, 1, true},
		{"TLS 1.3 two rotations", tls.VersionTLS13, 2, true},
		{"TLS 1.3 three rotations", tls.VersionTLS13, 3, false},
		{"TLS 1.2 one rotation", tls.VersionTLS12, 1, true},
		{"TLS 1.2 three rotations", tls.VersionTLS12, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			if got := resumes(t, s, srv.addr, tt.version, tt.rotations); got != tt.want {
				t.Errorf("DidResume = %v, want %v", got, tt.want)
			}
		})
	}
}

// A clone of a config built before a rotation sees the new keys too.
func TestRotationReachesClones(t *testing.T) {
	s, _ := ticketStore(t, true, time.Hour)
	cfg, err := s.ServerConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, cfg.Clone())
	if !resumes(t, s, srv.addr, 0, 2) {
		t.Error("no resumption on a cloned config after two rotations")
	}
	if resumes(t, s, srv.addr, 0, 3) {
		t.Error("resumption on a cloned config after three rotations")
	}
}

func TestSessionTicketsOff(t *testing.T) {
	s, srv := ticketStore(t, false, 0)
	cfg, err := s.ServerConfig(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.SessionTicketsDisabled {
		t.Error("SessionTicketsDisabled not set")
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		if resumes(t, s, srv.addr, v, 0) {
			t.Errorf("version %x resumed with session tickets off", v)
		}
	}
}

func (t *ticketKeys) current() [32]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys[0]
}

func TestRotationLoop(t *testing.T) {
	s, _ := ticketStore(t, true, 10*time.Millisecond)
	first := s.tickets.current()
	testutil.Eventually(t, 5*time.Second, func() bool { return s.tickets.current() != first }, "waiting for a ticket key rotation")
	// A reload with the default interval restarts the loop with 12h.
	if err := s.Load(&conf.TLSStore{SessionTickets: true}); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	every := s.rotEvery
	s.mu.Unlock()
	if every != DefaultTicketRotation {
		t.Errorf("rotation interval after reload = %v, want %v", every, DefaultTicketRotation)
	}
}

// Keys set from outside are shared: a ticket from one store resumes on
// another store given the same keys, a rotation done by the caller keeps
// older tickets open while their key is kept, and the local loop stops.
func TestSetTicketKeysSharedBetweenStores(t *testing.T) {
	a, srvA := ticketStore(t, true, 10*time.Millisecond)
	b, srvB := ticketStore(t, true, time.Hour)
	k1, k2, k3 := [32]byte{1}, [32]byte{2}, [32]byte{3}
	a.SetTicketKeys([][32]byte{k1, k2})
	b.SetTicketKeys([][32]byte{k1, k2})
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		cfg := &tls.Config{ServerName: "t.test", InsecureSkipVerify: true, MaxVersion: v,
			ClientSessionCache: tls.NewLRUClientSessionCache(4)}
		if cs, err := handshake(t, srvA.addr, cfg); err != nil || cs.DidResume {
			t.Fatalf("version %x: first handshake on a: %v, resumed %v", v, err, cs.DidResume)
		}
		b.SetTicketKeys([][32]byte{k2, k3, k1}) // the caller rotated: k1 still opens
		cs, err := handshake(t, srvB.addr, cfg)
		if err != nil || !cs.DidResume {
			t.Errorf("version %x: a ticket from a did not resume on b (%v)", v, err)
		}
		b.SetTicketKeys([][32]byte{k1, k2})
	}
	if got := a.tickets.current(); got != k1 {
		t.Errorf("a's sealing key changed to %x after SetTicketKeys: the local rotation still runs", got[:4])
	}
	if err := a.Load(&conf.TLSStore{SelfSigned: []string{"t.test"}, SessionTickets: true, TicketRotation: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	loop := a.rotStop != nil
	a.mu.Unlock()
	if loop {
		t.Error("a reload restarted the local rotation after SetTicketKeys")
	}
}
