package acme

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
)

// renewTime is when a certificate is due: RenewBefore (else a third of
// its lifetime) before it expires, less a jitter of up to a tenth of
// that window so that certificates issued together do not all renew at
// once. r is in [0, 1).
func renewTime(leaf *x509.Certificate, renewBefore time.Duration, r float64) time.Time {
	window := renewBefore
	if window <= 0 {
		window = leaf.NotAfter.Sub(leaf.NotBefore) / 3
	}
	jitter := time.Duration(r * float64(window) / 10)
	return leaf.NotAfter.Add(-window - jitter)
}

// ariTime applies the CA's suggested renewal window (RFC 9773): when it
// starts before due, a random time inside it wins; a later window is
// ignored (the CA may only bring renewal forward here).
func ariTime(due, start, end time.Time, r float64) time.Time {
	if start.IsZero() || !start.Before(due) || end.Before(start) {
		return due
	}
	return start.Add(time.Duration(r * float64(end.Sub(start))))
}

// backoff is the wait after the nth failure in a row (n >= 1): min
// doubling to max, and never less than the CA's Retry-After.
func backoff(n int, min, max, retryAfter time.Duration) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = minDur(d, max)
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

func minDur(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// Failure is why an order failed, classified for metrics and backoff.
type Failure struct {
	// Reason is one of the Reason constants.
	Reason string
	// RetryAfter is the CA's Retry-After, 0 when it sent none.
	RetryAfter time.Duration
	Err        error
}

func (f *Failure) Error() string { return f.Reason + ": " + f.Err.Error() }
func (f *Failure) Unwrap() error { return f.Err }

// classify wraps err into a *Failure (keeping one that is already).
func classify(err error) *Failure {
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	f = &Failure{Reason: ReasonOther, Err: err}
	var ae *acme.Error
	var authz *acme.AuthorizationError
	var ne net.Error
	switch {
	case errors.As(err, &authz):
		f.Reason = ReasonChallengeFailed
	case errors.As(err, &ae):
		f.Reason = problemReason(ae)
		if ae.Header != nil {
			f.RetryAfter = retryAfter(ae.Header.Get("Retry-After"), time.Now())
		}
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded):
		f.Reason = ReasonCAUnreachable
	}
	return f
}

func problemReason(e *acme.Error) string {
	t := strings.TrimPrefix(e.ProblemType, "urn:ietf:params:acme:error:")
	switch {
	case t == "rateLimited" || e.StatusCode == http.StatusTooManyRequests:
		return ReasonRateLimited
	case t == "connection" || t == "dns" || t == "incorrectResponse" || t == "tls" || t == "unauthorized":
		return ReasonChallengeFailed
	case e.StatusCode >= 500:
		return ReasonCAUnreachable
	}
	return ReasonOrderRejected
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// ariWindow asks the CA's renewalInfo endpoint (named in its directory,
// which x/crypto/acme does not parse) for the suggested window of leaf.
// It returns zero times when the CA offers no ARI.
func ariWindow(ctx context.Context, hc *http.Client, directory string, leaf *x509.Certificate) (start, end time.Time, err error) {
	var dir struct {
		RenewalInfo string `json:"renewalInfo"`
	}
	if err := getJSON(ctx, hc, directory, &dir); err != nil || dir.RenewalInfo == "" || len(leaf.AuthorityKeyId) == 0 {
		return time.Time{}, time.Time{}, err
	}
	var ri struct {
		SuggestedWindow struct {
			Start time.Time `json:"start"`
			End   time.Time `json:"end"`
		} `json:"suggestedWindow"`
	}
	u := strings.TrimSuffix(dir.RenewalInfo, "/") + "/" + ariCertID(leaf)
	if err := getJSON(ctx, hc, u, &ri); err != nil {
		return time.Time{}, time.Time{}, err
	}
	return ri.SuggestedWindow.Start, ri.SuggestedWindow.End, nil
}

// ariCertID is RFC 9773's certificate identifier: the base64url authority
// key identifier, a dot, the base64url DER serial number.
func ariCertID(leaf *x509.Certificate) string {
	serial := leaf.SerialNumber.Bytes()
	if len(serial) == 0 || serial[0]&0x80 != 0 {
		serial = append([]byte{0}, serial...)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(leaf.AuthorityKeyId) + "." + enc.EncodeToString(serial)
}

func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	return json.NewDecoder(http.MaxBytesReader(nil, res.Body, 1<<20)).Decode(v)
}
