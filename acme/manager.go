package acme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme"

	"github.com/edgeway/edgeway/internal/panics"
	edgetls "github.com/edgeway/edgeway/tls"
)

// ErrUnknownName is returned by Obtain for a name the configuration does
// not list: no certificate is ever ordered for it.
var ErrUnknownName = errors.New("acme: name not configured for ACME")

// Manager obtains, stores and renews the certificates of Config.Names.
// Make one with New, then Start; Stop ends it. Its methods are safe for
// concurrent use.
type Manager struct {
	cfg    Config
	client *acme.Client
	prefix string // storage folder of this CA

	acctMu    sync.Mutex
	acctReady bool

	tokMu  sync.Mutex
	tokens map[string]string // HTTP-01 token -> key authorization
	gate   lookupGate        // bounds the storage lookups of challenges

	mu      sync.Mutex
	names   map[string]*nameLoop
	flights map[string]*flight
	started bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// nameLoop is the goroutine that owns one name's schedule.
type nameLoop struct {
	stop context.CancelFunc
	kick chan struct{} // an Obtain finished: reschedule
	// cur is the certificate served for the name, nil before the
	// first; due is when it is to be renewed.
	mu  sync.Mutex
	cur *tls.Certificate
	due time.Time
	// ariFor is the certificate whose renewal information was asked
	// for last.
	ariFor *tls.Certificate
}

// flight is one order in progress that concurrent demands share.
type flight struct {
	done chan struct{}
	err  error
}

// New checks cfg and returns a Manager that has not contacted the CA.
func New(cfg Config) (*Manager, error) {
	c := cfg.withDefaults()
	switch {
	case c.Directory == "":
		return nil, errors.New("acme: no directory URL")
	case c.Storage == nil || c.Store == nil:
		return nil, errors.New("acme: Storage and Store are required")
	case !c.AcceptTerms:
		return nil, errors.New("acme: the CA's terms of service must be accepted (accept_terms on)")
	case c.KeyType != "ecdsa" && c.KeyType != "rsa":
		return nil, fmt.Errorf("acme: key type %q is not ecdsa or rsa", c.KeyType)
	}
	for _, ch := range c.Challenges {
		if ch != HTTP01 && ch != TLSALPN01 {
			return nil, fmt.Errorf("acme: unknown challenge type %q", ch)
		}
	}
	u, err := url.Parse(c.Directory)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("acme: directory %q is not a URL", c.Directory)
	}
	m := &Manager{
		cfg:     c,
		client:  &acme.Client{DirectoryURL: c.Directory, HTTPClient: c.HTTPClient, UserAgent: "edgeway"},
		prefix:  storagePrefix(u),
		tokens:  make(map[string]string),
		names:   make(map[string]*nameLoop),
		flights: make(map[string]*flight),
	}
	m.client.RetryBackoff = retryBackoff
	m.ctx, m.cancel = context.WithCancel(context.Background())
	// From now, not from Start: the listeners are bound before Start,
	// and another instance's order may send the CA's TLS-ALPN-01
	// validation to this one as soon as its socket takes connections.
	if s, ok := c.Store.(challengeLookupSetter); ok {
		s.SetChallengeLookup(m.TLSALPN01)
	}
	return m, nil
}

// retryBackoff replaces x/crypto/acme's, which retries until the context
// ends: a bad nonce or a server error is retried three times within
// seconds; a rate limit is not retried there, so that the name's loop
// waits out the CA's Retry-After without holding an order open.
func retryBackoff(n int, _ *http.Request, res *http.Response) time.Duration {
	if n > 3 || res == nil || res.StatusCode == http.StatusTooManyRequests {
		return 0
	}
	if ra := retryAfter(res.Header.Get("Retry-After"), time.Now()); ra > 0 && ra <= 10*time.Second {
		return ra
	}
	return time.Duration(1<<(n-1)) * time.Second
}

// storagePrefix names a CA's folder after its directory URL's host and
// path, so that staging and production keep apart.
func storagePrefix(u *url.URL) string {
	s := u.Host + u.Path
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, strings.Trim(s, "/"))
}

// Start serves the stored certificates of every name at once (a restart
// orders nothing new for them), then starts one goroutine per name that
// orders what is missing and renews what is due. It does not wait for
// any order.
func (m *Manager) Start() {
	m.mu.Lock()
	m.started = true
	m.mu.Unlock()
	m.SetNames(m.cfg.Names)
	if w, ok := m.cfg.Storage.(Watcher); ok {
		m.goSafe("", func() { m.watch(w) })
	}
}

// challengeLookupSetter is the CertStore's optional side that asks for
// TLS-ALPN-01 certificates published by other instances
// (edgetls.Store implements it).
type challengeLookupSetter interface {
	SetChallengeLookup(f func(name string) *tls.Certificate)
}

var _ challengeLookupSetter = (*edgetls.Store)(nil)

// SetNames changes the names managed (at a reload): new names are loaded
// or ordered, names no longer listed stop being renewed (their current
// certificate stays served until the store drops it).
func (m *Manager) SetNames(names []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Names = slices.Clone(names)
	if !m.started || m.ctx.Err() != nil {
		return
	}
	for name, l := range m.names {
		if !slices.Contains(names, name) {
			l.stop()
			delete(m.names, name)
		}
	}
	for _, name := range names {
		if _, ok := m.names[name]; ok {
			continue
		}
		ctx, stop := context.WithCancel(m.ctx)
		l := &nameLoop{stop: stop, kick: make(chan struct{}, 1)}
		m.names[name] = l
		if c := m.loadStored(ctx, name); c != nil {
			m.serve(name, l, c, "loaded", 0)
		}
		m.goSafe(name, func() { m.loop(ctx, name, l) })
	}
}

// Stop ends every loop and order in progress and waits for them. Files
// are written atomically, so storage stays consistent; a certificate
// already served stays served.
func (m *Manager) Stop() {
	m.cancel()
	m.wg.Wait()
}

// Obtain orders a certificate for name now, or joins the order in
// progress, and returns when it is served or failed. It does not check
// whether the current one is due.
func (m *Manager) Obtain(ctx context.Context, name string) error {
	m.mu.Lock()
	ok := slices.Contains(m.cfg.Names, name)
	l := m.names[name]
	m.mu.Unlock()
	if !ok || l == nil {
		return fmt.Errorf("%w: %s", ErrUnknownName, name)
	}
	err := m.shared(ctx, name, l, curLeaf(l))
	select {
	case l.kick <- struct{}{}:
	default:
	}
	return err
}

// shared runs one order for name, or waits for the one in progress.
// seen is the certificate the caller decided to replace (nil for none):
// one stored since by another instance is served instead of ordering.
func (m *Manager) shared(ctx context.Context, name string, l *nameLoop, seen *x509.Certificate) error {
	m.mu.Lock()
	f, ok := m.flights[name]
	if !ok {
		f = &flight{done: make(chan struct{})}
		m.flights[name] = f
		m.mu.Unlock()
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer func() {
				m.mu.Lock()
				delete(m.flights, name)
				m.mu.Unlock()
				close(f.done)
			}()
			defer func() {
				if r := recover(); r != nil {
					panics.Report("acme order", r, slog.String("name", name))
					f.err = fmt.Errorf("acme: ordering %s panicked: %v", name, r)
				}
			}()
			// The order belongs to the manager, not to one caller:
			// a caller that gives up does not cancel it for the others.
			f.err = m.obtain(m.ctx, name, l, seen)
		}()
	} else {
		m.mu.Unlock()
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop keeps name's certificate: orders it when missing or due, retries
// with backoff, sleeps until the next renewal.
func (m *Manager) loop(ctx context.Context, name string, l *nameLoop) {
	failures := 0
	var st edgetls.RenewalStatus
	for ctx.Err() == nil {
		now := m.cfg.Now()
		l.mu.Lock()
		cur, next := l.cur, l.due
		l.mu.Unlock()
		if cur == nil || !now.Before(next) {
			st.LastAttempt = now
			err := m.shared(ctx, name, l, leafOf(cur))
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				failures, st.LastError, st.Reason, st.Failures = 0, "", "", 0
				continue
			}
			failures++
			f := classify(err)
			wait := backoff(failures, m.cfg.RetryMin, m.cfg.RetryMax, f.RetryAfter)
			next = now.Add(wait)
			st.LastError, st.Reason, st.Failures = err.Error(), f.Reason, failures
			m.cfg.Log.Error("acme: order failed; the current certificate stays served", "name", name,
				"reason", f.Reason, "failures", failures, "retry_in", wait.String(), "err", err)
			m.cfg.Observe(Event{Name: name, Kind: "failure", Reason: f.Reason, Err: err})
		}
		if cur != nil && failures == 0 {
			next = m.checkARI(ctx, l, cur, next)
		}
		st.NextAttempt = next
		m.cfg.Store.SetRenewalStatus(name, st)
		if !m.sleep(ctx, next, l.kick) {
			return
		}
	}
}

// sleep waits until t, a kick or the end of ctx (false).
func (m *Manager) sleep(ctx context.Context, t time.Time, kick <-chan struct{}) bool {
	timer := time.NewTimer(t.Sub(m.cfg.Now()))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
	case <-kick:
	}
	return true
}

// serve puts c into the store and schedules its renewal.
func (m *Manager) serve(name string, l *nameLoop, c *tls.Certificate, kind string, took time.Duration) error {
	if err := m.cfg.Store.Put(edgetls.SourceACME, c); err != nil {
		return &Failure{Reason: ReasonOther, Err: err}
	}
	due := renewTime(c.Leaf, m.cfg.RenewBefore, m.cfg.Rand())
	l.mu.Lock()
	l.cur, l.due = c, due
	l.mu.Unlock()
	m.cfg.Store.SetRenewalStatus(name, edgetls.RenewalStatus{NextAttempt: due})
	m.cfg.Log.Info("acme: certificate served", "name", name, "how", kind, "not_after", c.Leaf.NotAfter,
		"renew_at", due, "took", took.String())
	m.cfg.Observe(Event{Name: name, Kind: kind})
	return nil
}

// checkARI asks the CA's renewal information once per certificate and
// returns the renewal time it brings forward, or due. A CA without ARI,
// or one that does not answer, leaves due as it is.
func (m *Manager) checkARI(ctx context.Context, l *nameLoop, cur *tls.Certificate, due time.Time) time.Time {
	l.mu.Lock()
	asked := l.ariFor == cur
	l.ariFor = cur
	l.mu.Unlock()
	if asked {
		return due
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start, end, err := ariWindow(ctx, m.cfg.HTTPClient, m.cfg.Directory, cur.Leaf)
	if err != nil || start.IsZero() {
		return due
	}
	if d := ariTime(due, start, end, m.cfg.Rand()); d.Before(due) {
		l.mu.Lock()
		if l.cur == cur {
			l.due = d
		}
		l.mu.Unlock()
		m.cfg.Log.Info("acme: renewal brought forward by the CA's renewal information", "renew_at", d)
		return d
	}
	return due
}

// goSafe runs fn in a goroutine Stop waits for; a panic is logged.
func (m *Manager) goSafe(name string, fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				panics.Report("acme renewal loop", r, slog.String("name", name))
			}
		}()
		fn()
	}()
}
