package jwt

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeway/edgeway/internal/panics"
)

// Remote is a key set kept from a URL (an identity provider's jwks_uri):
// fetched once at Start and again in the background when the answer's
// Cache-Control max-age runs out, and on demand (Refetch) when a token
// names a key it does not hold, at most once per MinGap however many
// such tokens arrive. A failed fetch keeps the last good set (logged and
// counted). Requests read the set with one atomic load and never fetch
// but through Refetch's single flight.
type Remote struct {
	// URL is the JWKS document's address (http or https).
	URL string
	// Refresh is how long a set is used before it is fetched again when
	// the answer gives no max-age. Zero: 5 minutes.
	Refresh time.Duration
	// MinGap is the least time between two fetches that Refetch starts.
	// Zero: min(10s, Refresh).
	MinGap time.Duration
	// Timeout bounds one fetch. Zero: 5 seconds.
	Timeout time.Duration
	// Log receives failed fetches (Warn) and key rotations (Info); nil
	// discards them.
	Log *slog.Logger
	// Client fetches the document; nil: a client without proxies.
	Client *http.Client

	keys atomic.Pointer[KeySet]

	mu       sync.Mutex
	inflight chan struct{} // closed when the running fetch ends; nil: none
	last     time.Time     // when the last fetch started
	next     time.Duration // the wait before the background fetch; set by fetch
	fails    int           // failed fetches in a row
	raw      []byte        // the last good document

	ok, failed atomic.Int64
	ctx        context.Context // ends at Stop; fetches run under it
	cancel     context.CancelFunc
	done       chan struct{}
}

// Bounds on a fetched set's lifetime: an answer's max-age is honoured
// between them, and a Refresh set below minMaxAge lowers the floor.
const (
	minMaxAge      = time.Minute
	maxMaxAge      = 24 * time.Hour
	maxJWKSBody    = 1 << 20
	defaultRefresh = 5 * time.Minute
	defaultTimeout = 5 * time.Second
	defaultMinGap  = 10 * time.Second
	firstRetry     = time.Second
)

// Start fetches the set in the background now and from then on, until
// Stop.
func (r *Remote) Start() {
	if r.Refresh <= 0 {
		r.Refresh = defaultRefresh
	}
	if r.MinGap <= 0 {
		r.MinGap = min(defaultMinGap, r.Refresh)
	}
	if r.Timeout <= 0 {
		r.Timeout = defaultTimeout
	}
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	if r.Client == nil {
		r.Client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 1, IdleConnTimeout: time.Minute}}
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.done = make(chan struct{})
	go r.loop(r.ctx)
}

// Stop ends the background fetches and waits for them.
func (r *Remote) Stop() {
	r.cancel()
	<-r.done
}

// Keys returns the last good set, nil before the first.
func (r *Remote) Keys() *KeySet { return r.keys.Load() }

// Stats returns the fetches that succeeded and failed so far.
func (r *Remote) Stats() (ok, failed int64) { return r.ok.Load(), r.failed.Load() }

// Refetch asks for the set again, for a token whose key the set lacks:
// it waits (until ctx ends) for the fetch under way, or for one it
// starts when none started in the last MinGap; otherwise it returns at
// once. It reports whether the set may have changed.
func (r *Remote) Refetch(ctx context.Context) bool {
	r.mu.Lock()
	ch := r.inflight
	if ch == nil {
		if time.Since(r.last) < r.MinGap {
			r.mu.Unlock()
			return false
		}
		ch = r.startLocked()
	}
	r.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *Remote) loop(ctx context.Context) {
	defer close(r.done)
	defer panics.Recover("jwks refresh")
	for {
		r.mu.Lock()
		ch := r.inflight
		if ch == nil {
			ch = r.startLocked()
		}
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			<-ch // the fetch sees ctx too
			return
		}
		r.mu.Lock()
		wait := r.next
		r.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// startLocked starts a fetch, under r.mu, and returns the channel that
// its end closes.
func (r *Remote) startLocked() chan struct{} {
	ch := make(chan struct{})
	r.inflight, r.last = ch, time.Now()
	go func() {
		defer func() {
			r.mu.Lock()
			r.inflight = nil
			r.mu.Unlock()
			close(ch)
		}()
		defer panics.Recover("jwks fetch")
		r.fetchOnce()
	}()
	return ch
}

// fetchOnce fetches the document, keeps its set when it parses, and
// sets the wait before the next background fetch.
func (r *Remote) fetchOnce() {
	ctx, cancel := context.WithTimeout(r.ctx, r.Timeout)
	defer cancel()
	data, maxAge, err := r.get(ctx)
	var ks *KeySet
	if err == nil {
		ks, err = ParseKeySet(data)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return // stopped
	}
	if err != nil {
		r.failed.Add(1)
		r.fails++
		// Retry soon, then back off, never past the refresh interval.
		r.next = min(firstRetry<<min(r.fails-1, 10), r.Refresh)
		r.Log.Warn("jwks fetch failed; keeping the last good key set", "url", r.URL, "error", err.Error(),
			"have_keys", r.keys.Load() != nil)
		return
	}
	r.ok.Add(1)
	r.fails = 0
	r.next = lifetime(maxAge, r.Refresh)
	if string(data) == string(r.raw) {
		return // unchanged: the same set, so grants made with it still count
	}
	r.raw = data
	r.keys.Store(ks)
	r.Log.Info("jwks key set loaded", "url", r.URL, "keys", len(ks.keys))
}

// lifetime is how long a set fetched with maxAge (-1: none given) is
// used: maxAge within [min(1m, refresh), 24h], refresh without one.
func lifetime(maxAge, refresh time.Duration) time.Duration {
	if maxAge < 0 {
		return refresh
	}
	return min(max(maxAge, min(minMaxAge, refresh)), maxMaxAge)
}

// get fetches the document and its Cache-Control max-age (-1: none).
func (r *Remote) get(ctx context.Context) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := r.Client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("fetching jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, 0, fmt.Errorf("fetching jwks: status %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("reading jwks: %w", err)
	}
	if len(data) > maxJWKSBody {
		return nil, 0, fmt.Errorf("jwks document over %d bytes", maxJWKSBody)
	}
	return data, maxAgeOf(resp.Header.Values("Cache-Control")), nil
}

// maxAgeOf returns the max-age directive of Cache-Control values (RFC
// 9111 §5.2.2.1), 0 for no-cache or no-store, -1 when none is given.
func maxAgeOf(values []string) time.Duration {
	age := time.Duration(-1)
	for _, v := range values {
		for d := range strings.SplitSeq(v, ",") {
			name, val, _ := strings.Cut(strings.TrimSpace(d), "=")
			switch strings.ToLower(name) {
			case "no-cache", "no-store":
				return 0
			case "max-age":
				n, err := strconv.ParseInt(strings.Trim(val, `"`), 10, 64)
				if err == nil && n >= 0 {
					age = time.Duration(min(n, int64(maxMaxAge/time.Second))) * time.Second
				}
			}
		}
	}
	return age
}
