package edgetls

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"slices"
	"sync"
	"time"
)

// ticketKeysKept is how many keys decrypt tickets: the current one, which
// also encrypts, and the previous two.
const ticketKeysKept = 3

// ticketKeys are the store's session ticket keys. The configs ServerConfig
// builds encrypt and decrypt tickets through WrapSession and UnwrapSession
// with these keys, so a rotation reaches every config, clones included
// (tls.Config.Clone copies the callbacks, not a snapshot of the keys).
type ticketKeys struct {
	// holder is a config used only for its ticket keys and its
	// EncryptTicket/DecryptTicket methods (the standard ticket format).
	holder *tls.Config
	mu     sync.Mutex
	keys   [][32]byte // newest first
}

func newTicketKeys() *ticketKeys {
	t := &ticketKeys{holder: &tls.Config{}}
	t.rotate()
	return t
}

// rotate makes a new random key current and forgets the oldest beyond
// ticketKeysKept.
func (t *ticketKeys) rotate() {
	var k [32]byte
	rand.Read(k[:]) // never fails (crypto/rand, Go 1.24+)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = append([][32]byte{k}, t.keys...)
	if len(t.keys) > ticketKeysKept {
		t.keys = t.keys[:ticketKeysKept]
	}
	t.holder.SetSessionTicketKeys(t.keys)
}

// set replaces the keys with keys (newest first, the first seals).
func (t *ticketKeys) set(keys [][32]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys = slices.Clone(keys)
	t.holder.SetSessionTicketKeys(t.keys)
}

// SetTicketKeys makes keys the session ticket keys of every config the
// store built or builds: the first seals new tickets, each one opens
// them. It is how instances that share their keys (a cluster block) make
// a ticket from one instance resume on another. From the first call on
// the store no longer rotates keys itself: the caller does, for as long
// as the store lives (a reload does not restart the local rotation). A
// call with no keys is ignored.
func (s *Store) SetTicketKeys(keys [][32]byte) {
	if len(keys) == 0 {
		return
	}
	s.mu.Lock()
	s.keysFed = true
	if s.rotStop != nil {
		s.rotStop()
		s.rotStop = nil
	}
	s.mu.Unlock()
	s.tickets.set(keys)
}

func (t *ticketKeys) wrap(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
	return t.holder.EncryptTicket(cs, ss)
}

// unwrap returns (nil, nil), a full handshake, for a ticket no kept key
// decrypts.
func (t *ticketKeys) unwrap(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
	return t.holder.DecryptTicket(identity, cs)
}

// startRotationLocked (re)starts the rotation loop when the interval of
// the settings differs from the running one, unless SetTicketKeys took
// the keys over.
func (s *Store) startRotationLocked() {
	if s.keysFed {
		return
	}
	every := s.settings.rotation
	if s.rotStop != nil && s.rotEvery == every {
		return
	}
	if s.rotStop != nil {
		s.rotStop()
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.rotStop, s.rotEvery = cancel, every
	s.goSafe("ticket rotation", func() { s.rotateLoop(ctx, every) })
}

func (s *Store) rotateLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.tickets.rotate()
			s.log.Debug("tls: session ticket key rotated")
		}
	}
}
