package edgetls

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/ocsp"
)

// maxOCSPResponse bounds what is read from a responder.
const maxOCSPResponse = 64 << 10

// clockSkew is how far in the future a response's ThisUpdate may lie.
const clockSkew = 5 * time.Minute

// reconcileStaplerLocked starts stapling st when the settings and the
// certificate allow it (a responder URL and the issuer in the chain), and
// stops it otherwise.
func (s *Store) reconcileStaplerLocked(st *certState) {
	hasResponder := len(st.leaf.OCSPServer) > 0
	if !s.settings.ocsp || !hasResponder || st.issuer == nil {
		s.stopStaplerLocked(st)
		if s.settings.ocsp && hasResponder && st.issuer == nil {
			st.mu.Lock()
			st.ocsp.lastErr = "issuer certificate is not in the chain; not stapled"
			st.mu.Unlock()
		}
		return
	}
	if st.stop != nil || s.closed {
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	st.stop = cancel
	s.goSafe("ocsp "+st.leaf.Subject.CommonName, func() { s.stapleLoop(ctx, st) })
}

// stopStaplerLocked stops st's stapler and serves st without a staple.
func (s *Store) stopStaplerLocked(st *certState) {
	if st.stop == nil {
		return
	}
	// Cancel first: the stapler checks its context under st.mu before it
	// stores, so nothing is stapled after this.
	st.stop()
	st.stop = nil
	st.mu.Lock()
	st.ocsp = ocspStatus{}
	st.served.Store(st.base)
	st.mu.Unlock()
}

// stapleLoop keeps st's staple fresh until ctx ends.
func (s *Store) stapleLoop(ctx context.Context, st *certState) {
	var retry time.Duration
	for {
		wait := s.refreshStaple(ctx, st, &retry)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// refreshStaple asks the responder once, staples a good answer, and
// returns how long to wait before asking again.
func (s *Store) refreshStaple(ctx context.Context, st *certState, retry *time.Duration) time.Duration {
	st.mu.Lock()
	st.dropExpiredLocked(s.timing.now())
	st.mu.Unlock()
	resp, raw, err := s.fetchOCSP(ctx, st)
	now := s.timing.now()
	st.mu.Lock()
	defer st.mu.Unlock()
	if ctx.Err() != nil {
		return 0
	}
	st.ocsp.lastFetch = now
	log := s.log.With("names", st.leaf.DNSNames, "responder", st.leaf.OCSPServer[0])
	switch {
	case err != nil:
		st.ocsp.lastErr = err.Error()
		log.Warn("tls: OCSP fetch failed", "err", err)
		return s.retryLocked(st, now, retry)
	case resp.Status == ocsp.Good:
		st.ocsp = ocspStatus{raw: raw, thisUpdate: resp.ThisUpdate,
			nextUpdate: resp.NextUpdate, lastFetch: now}
		c := *st.base // a new value: handshakes may be reading the old one
		c.OCSPStaple = raw
		st.served.Store(&c)
		*retry = 0
		log.Debug("tls: OCSP response stapled", "next_update", resp.NextUpdate)
		return s.refreshAfter(resp, now)
	case resp.Status == ocsp.Revoked:
		st.ocsp = ocspStatus{lastFetch: now, lastErr: "certificate revoked at " +
			resp.RevokedAt.UTC().Format(time.RFC3339)}
		st.served.Store(st.base)
		*retry = 0
		log.Error("tls: certificate is revoked; not stapling", "revoked_at", resp.RevokedAt)
		return s.refreshAfter(resp, now)
	default:
		st.ocsp.lastErr = "responder does not know the certificate (status unknown)"
		log.Warn("tls: OCSP status unknown")
		return s.retryLocked(st, now, retry)
	}
}

// refreshAfter is the wait after an answer: half its remaining validity,
// kept within the refresh bounds and before it expires.
func (s *Store) refreshAfter(resp *ocsp.Response, now time.Time) time.Duration {
	if resp.NextUpdate.IsZero() {
		return s.timing.ocspMaxRefresh
	}
	left := resp.NextUpdate.Sub(now)
	wait := min(max(left/2, s.timing.ocspMinRefresh), s.timing.ocspMaxRefresh)
	return max(min(wait, left), 0)
}

// retryLocked is the wait after a failure: an exponential backoff, cut
// short to drop the current staple when it expires first.
func (s *Store) retryLocked(st *certState, now time.Time, retry *time.Duration) time.Duration {
	*retry = min(max(*retry*2, s.timing.ocspRetryMin), s.timing.ocspRetryMax)
	wait := *retry
	if st.ocsp.raw == nil || st.ocsp.nextUpdate.IsZero() {
		return wait
	}
	if st.dropExpiredLocked(now) {
		return wait
	}
	return min(wait, st.ocsp.nextUpdate.Sub(now))
}

// dropExpiredLocked stops stapling a response whose NextUpdate has
// passed, and reports whether it did.
func (st *certState) dropExpiredLocked(now time.Time) bool {
	o := &st.ocsp
	if o.raw == nil || o.nextUpdate.IsZero() || now.Before(o.nextUpdate) {
		return false
	}
	o.raw, o.thisUpdate, o.nextUpdate = nil, time.Time{}, time.Time{}
	st.served.Store(st.base)
	return true
}

// fetchOCSP asks each responder of st in turn for a verified, current
// response.
func (s *Store) fetchOCSP(ctx context.Context, st *certState) (*ocsp.Response, []byte, error) {
	req, err := ocsp.CreateRequest(st.leaf, st.issuer, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("creating OCSP request: %w", err)
	}
	var errs []error
	for _, url := range st.leaf.OCSPServer {
		resp, raw, err := s.askResponder(ctx, url, req, st)
		if err == nil {
			return resp, raw, nil
		}
		errs = append(errs, fmt.Errorf("ocsp %s: %w", url, err))
	}
	return nil, nil, errors.Join(errs...)
}

func (s *Store) askResponder(ctx context.Context, url string, req []byte, st *certState) (*ocsp.Response, []byte, error) {
	raw, err := s.postOCSP(ctx, url, req)
	if err != nil {
		return nil, nil, err
	}
	resp, err := ocsp.ParseResponseForCert(raw, st.leaf, st.issuer)
	if err != nil {
		return nil, nil, fmt.Errorf("bad response: %w", err)
	}
	now := s.timing.now()
	if !resp.NextUpdate.IsZero() && !now.Before(resp.NextUpdate) {
		return nil, nil, fmt.Errorf("stale response: next update %s has passed", resp.NextUpdate.UTC().Format(time.RFC3339))
	}
	if resp.ThisUpdate.After(now.Add(clockSkew)) {
		return nil, nil, fmt.Errorf("response from the future: this update %s", resp.ThisUpdate.UTC().Format(time.RFC3339))
	}
	return resp, raw, nil
}

// postOCSP sends an OCSP request (RFC 6960, Appendix A.1) with a timeout.
func (s *Store) postOCSP(ctx context.Context, url string, body []byte) ([]byte, error) {
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, errors.New("not an http(s) URL")
	}
	ctx, cancel := context.WithTimeout(ctx, s.timing.ocspTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/ocsp-request")
	req.Header.Set("Accept", "application/ocsp-response")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %s", resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxOCSPResponse+1))
	if err != nil {
		return nil, fmt.Errorf("reading response: %w", err)
	}
	if len(raw) > maxOCSPResponse {
		return nil, fmt.Errorf("response larger than %d bytes", maxOCSPResponse)
	}
	return raw, nil
}
