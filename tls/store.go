package edgetls

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/panics"
)

// Defaults of the store-wide settings (conf fills the same ones in).
const (
	DefaultTicketRotation = 12 * time.Hour
	selfSignedValidity    = 365 * 24 * time.Hour
)

var errClosed = errors.New("tls: store is closed")

// Store holds the certificates every TLS listener serves and chooses one
// per handshake. The zero value is not usable; make one with NewStore.
// All methods are safe for concurrent use.
type Store struct {
	log     *slog.Logger
	idx     atomic.Pointer[index]
	tickets *ticketKeys
	timing  timing
	client  *http.Client // OCSP responders

	ctx    context.Context // cancelled by Close; parent of every goroutine
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex // serialises Load, Put, Close and publishing
	closed    bool
	fileLayer []*entry          // cert then self_signed lines of the last Load
	puts      map[string]*entry // by putKey
	gen       uint64            // last gen handed out
	files     []string
	settings  settings
	states    map[[32]byte]*certState // by chain hash, those published
	rotStop   context.CancelFunc      // the ticket rotation loop
	rotEvery  time.Duration
	keysFed   bool // SetTicketKeys was called: no local rotation

	acme acmeState // TLS-ALPN-01 challenges and renewal status (acme.go)
}

// settings are the store-wide options of the last Load.
type settings struct {
	ocsp     bool
	tickets  bool
	rotation time.Duration
}

// timing holds the clock and the OCSP schedule bounds. Tests shorten them
// before the first Load; nothing changes them afterwards.
type timing struct {
	now func() time.Time
	// ocspMinRefresh and ocspMaxRefresh bound the wait before refreshing
	// a good response (half its remaining validity): at least a few
	// minutes apart, at most 12h.
	ocspMinRefresh, ocspMaxRefresh time.Duration
	// ocspRetryMin and ocspRetryMax bound the exponential backoff after a
	// failed fetch.
	ocspRetryMin, ocspRetryMax time.Duration
	// ocspTimeout bounds one request to a responder.
	ocspTimeout time.Duration
}

func defaultTiming() timing {
	return timing{
		now:            time.Now,
		ocspMinRefresh: 5 * time.Minute,
		ocspMaxRefresh: 12 * time.Hour,
		ocspRetryMin:   time.Minute,
		ocspRetryMax:   time.Hour,
		ocspTimeout:    10 * time.Second,
	}
}

func settingsOf(cfg *conf.TLSStore) settings {
	if cfg == nil {
		return settings{ocsp: true, tickets: true, rotation: DefaultTicketRotation}
	}
	return settings{
		ocsp:     cfg.OCSPStapling,
		tickets:  cfg.SessionTickets,
		rotation: cmp.Or(cfg.TicketRotation, DefaultTicketRotation),
	}
}

// NewStore returns an empty store with the default settings (OCSP
// stapling and session tickets on, ticket keys rotated every 12h). A nil
// log discards. Close stops its background goroutines.
func NewStore(log *slog.Logger) *Store {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	s := &Store{
		log:      log,
		tickets:  newTicketKeys(),
		timing:   defaultTiming(),
		client:   &http.Client{Transport: tr},
		puts:     make(map[string]*entry),
		states:   make(map[[32]byte]*certState),
		settings: settingsOf(nil),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.startRotationLocked() // nothing else holds s yet
	return s
}

// Load replaces the certificates of the tls block (cert and self_signed
// lines) and the store-wide settings. Everything is read and checked
// first; on any error nothing changes and the error names the file and
// the problem. Certificates given to Put are kept. A nil cfg means no
// file certificates and the default settings. Warnings (an expired
// certificate, one without DNS names) are logged, not refused.
func (s *Store) Load(cfg *conf.TLSStore) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	layer, warns, err := s.readLayer(cfg)
	if err != nil {
		return err
	}
	s.gen++
	batch := make(map[[32]byte]*certState)
	for _, e := range layer {
		if old := s.sameAsBefore(e); old != nil {
			e.gen = old.gen
		} else {
			e.gen = s.gen
		}
		// One state per chain, also for a file listed twice.
		e.st = s.internLocked(e.st)
		if st, ok := batch[e.st.hash]; ok {
			e.st = st
		}
		batch[e.st.hash] = e.st
	}
	s.fileLayer = layer
	s.files = filesOf(layer)
	s.settings = settingsOf(cfg)
	s.publishLocked()
	s.startRotationLocked()
	for _, w := range warns {
		s.log.Warn(w)
	}
	return nil
}

// sameAsBefore returns the entry of the previous Load that e repeats
// unchanged, so that an unchanged file keeps its place among sources.
func (s *Store) sameAsBefore(e *entry) *entry {
	for _, old := range s.fileLayer {
		if old.source == e.source && old.certFile == e.certFile &&
			old.keyFile == e.keyFile && old.st.hash == e.st.hash {
			return old
		}
	}
	return nil
}

// readLayer reads the certificates cfg names, without touching the store.
func (s *Store) readLayer(cfg *conf.TLSStore) ([]*entry, []string, error) {
	if cfg == nil {
		return nil, nil, nil
	}
	now := s.timing.now()
	var layer []*entry
	var warns []string
	for _, c := range cfg.Certificates {
		cert, err := loadPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, nil, err
		}
		e := newEntry(SourceFile, cert)
		e.certFile, e.keyFile, e.isDefault = c.CertFile, c.KeyFile, c.Default
		warns = append(warns, certWarnings(e, now)...)
		layer = append(layer, e)
	}
	if len(cfg.SelfSigned) > 0 {
		e, err := s.selfSignedEntry(cfg.SelfSigned, now)
		if err != nil {
			return nil, nil, err
		}
		layer = append(layer, e)
	}
	return layer, warns, nil
}

// selfSignedEntry reuses the previous self-signed certificate for the same
// names, so a reload does not change what clients see.
func (s *Store) selfSignedEntry(names []string, now time.Time) (*entry, error) {
	asked := strings.Join(names, ",")
	for _, old := range s.fileLayer {
		if old.source == SourceSelfSigned && old.asked == asked && now.Before(old.st.leaf.NotAfter) {
			e := *old
			return &e, nil
		}
	}
	cert, err := SelfSigned(names, now.Add(selfSignedValidity))
	if err != nil {
		return nil, fmt.Errorf("tls: self_signed %v: %w", names, err)
	}
	e := newEntry(SourceSelfSigned, cert)
	e.asked = asked
	return e, nil
}

// certWarnings lists what is wrong with a loaded certificate but does not
// stop it from being served.
func certWarnings(e *entry, now time.Time) []string {
	leaf, at := e.st.leaf, "tls: cert "+e.certFile+": "
	var w []string
	switch {
	case now.After(leaf.NotAfter):
		w = append(w, at+"certificate expired at "+leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		w = append(w, at+"certificate is not valid before "+leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if len(e.names) == 0 {
		w = append(w, at+"certificate has no DNS names; it can only be the default")
	}
	return w
}

func filesOf(layer []*entry) []string {
	var files []string
	for _, e := range layer {
		if e.certFile != "" {
			files = append(files, e.certFile, e.keyFile)
		}
	}
	slices.Sort(files)
	return slices.Compact(files)
}

func nameKeyOf(names []string) string {
	n := make([]string, 0, len(names))
	for _, x := range names {
		n = append(n, normalizeName(x))
	}
	slices.Sort(n)
	return strings.Join(slices.Compact(n), ",")
}

// Files returns the certificate and key files read by the last successful
// Load, sorted. The caller watches them and calls Load when one changes.
func (s *Store) Files() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.files)
}

// Put adds a certificate from another source (SourceACME), or replaces the
// one of that source with the same names and key type. Its names are the
// leaf's DNS SANs. cert is not modified; a copy is kept.
//
// Put certificates are a layer of their own that Load keeps. When a file
// and a put certificate cover the same name, the one that changed last is
// served: a Put after a Load wins, and a Load that changes a file wins
// back (a Load that rereads an unchanged file does not).
func (s *Store) Put(source string, cert *tls.Certificate) error {
	switch source {
	case "":
		return errors.New("tls: put: empty source")
	case SourceFile, SourceSelfSigned:
		return fmt.Errorf("tls: put: source %q is reserved for Load", source)
	}
	c, err := checkPut(cert)
	if err != nil {
		return fmt.Errorf("tls: put %s: %w", source, err)
	}
	e := newEntry(source, c)
	if len(e.names) == 0 {
		return fmt.Errorf("tls: put %s: certificate has no DNS names", source)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.gen++
	e.gen = s.gen
	e.st = s.internLocked(e.st)
	s.puts[fmt.Sprintf("%s\x00%s\x00%d", source, e.nameKey, e.algo)] = e
	s.publishLocked()
	return nil
}

// checkPut returns a copy of cert with Leaf set, after checking that the
// key matches.
func checkPut(cert *tls.Certificate) (*tls.Certificate, error) {
	if cert == nil || len(cert.Certificate) == 0 {
		return nil, errors.New("no certificate")
	}
	c := *cert
	if c.Leaf == nil {
		_, leaf, err := parseChainDER(c.Certificate)
		if err != nil {
			return nil, err
		}
		c.Leaf = leaf
	}
	if !keyMatches(c.Leaf, c.PrivateKey) {
		return nil, ErrKeyMismatch
	}
	return &c, nil
}

// internLocked returns the published state of the same chain, if any, so
// that its staple carries over; else st.
func (s *Store) internLocked(st *certState) *certState {
	if old, ok := s.states[st.hash]; ok {
		return old
	}
	return st
}

// publishLocked builds the index of the file layer and the put layer,
// swaps it in, and starts or stops OCSP stapling to match.
func (s *Store) publishLocked() {
	puts := slices.SortedFunc(maps.Values(s.puts), func(a, b *entry) int {
		return cmp.Compare(a.gen, b.gen)
	})
	entries := append(slices.Clone(s.fileLayer), puts...)
	ix := buildIndex(entries)
	used := make(map[[32]byte]*certState, len(entries))
	for _, e := range entries {
		used[e.st.hash] = e.st
	}
	for h, st := range s.states {
		if used[h] != st {
			s.stopStaplerLocked(st)
		}
	}
	s.states = used
	for _, st := range used {
		s.reconcileStaplerLocked(st)
	}
	s.idx.Store(ix)
}

// List describes every certificate of the store, served or shadowed by a
// newer source, for the admin API: file certificates in configuration
// order, then put ones oldest first.
func (s *Store) List() []CertInfo {
	ix := s.idx.Load()
	if ix == nil {
		return nil
	}
	def := defaultEntry(ix.entries)
	out := make([]CertInfo, 0, len(ix.entries))
	for _, e := range ix.entries {
		out = append(out, e.info(e == def, ix.active[e]))
	}
	s.acme.annotate(out)
	return out
}

// Close stops the background goroutines (OCSP fetching, ticket key
// rotation) and waits for them. The certificates stay served.
func (s *Store) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.client.CloseIdleConnections()
}

// goSafe runs fn in a goroutine that Close waits for; a panic is logged
// and ends only that goroutine.
func (s *Store) goSafe(what string, fn func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				panics.Report("tls background task", r, slog.String("task", what))
			}
		}()
		fn()
	}()
}
