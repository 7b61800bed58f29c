package acme

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/crypto/acme"
)

func TestRenewTime(t *testing.T) {
	t.Parallel()
	nb := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	leaf := &x509.Certificate{NotBefore: nb, NotAfter: nb.Add(90 * 24 * time.Hour)}
	for _, tc := range []struct {
		desc   string
		before time.Duration
		r      float64
		want   time.Time
	}{
		{desc: "a third of the lifetime left", r: 0, want: nb.Add(60 * 24 * time.Hour)},
		{desc: "jitter up to a tenth of the window earlier", r: 0.5, want: nb.Add(60*24*time.Hour - 36*time.Hour)},
		{desc: "renew_before", before: 10 * 24 * time.Hour, r: 0, want: nb.Add(80 * 24 * time.Hour)},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := renewTime(leaf, tc.before, tc.r); !got.Equal(tc.want) {
				t.Errorf("renewTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestARITime(t *testing.T) {
	t.Parallel()
	due := time.Date(2030, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		desc       string
		start, end time.Time
		want       time.Time
	}{
		{desc: "no window", want: due},
		{desc: "earlier window wins, at r inside it", start: due.Add(-48 * time.Hour), end: due.Add(-24 * time.Hour), want: due.Add(-36 * time.Hour)},
		{desc: "later window ignored", start: due.Add(time.Hour), end: due.Add(2 * time.Hour), want: due},
		{desc: "inverted window ignored", start: due.Add(-time.Hour), end: due.Add(-2 * time.Hour), want: due},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			if got := ariTime(due, tc.start, tc.end, 0.5); !got.Equal(tc.want) {
				t.Errorf("ariTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n          int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, time.Minute}, {2, 0, 2 * time.Minute}, {4, 0, 8 * time.Minute},
		{20, 0, time.Hour}, {1, 10 * time.Minute, 10 * time.Minute}, {20, 3 * time.Hour, 3 * time.Hour},
	} {
		if got := backoff(tc.n, time.Minute, time.Hour, tc.retryAfter); got != tc.want {
			t.Errorf("backoff(%d, retry-after %v) = %v, want %v", tc.n, tc.retryAfter, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	h := http.Header{"Retry-After": {"120"}}
	for _, tc := range []struct {
		desc  string
		err   error
		want  string
		after time.Duration
	}{
		{desc: "rate limited", err: &acme.Error{StatusCode: 429, ProblemType: "urn:ietf:params:acme:error:rateLimited", Header: h}, want: ReasonRateLimited, after: 2 * time.Minute},
		{desc: "rejected identifier", err: fmt.Errorf("creating the order: %w", &acme.Error{StatusCode: 400, ProblemType: "urn:ietf:params:acme:error:rejectedIdentifier"}), want: ReasonOrderRejected},
		{desc: "server error", err: &acme.Error{StatusCode: 503}, want: ReasonCAUnreachable},
		{desc: "authorization failed", err: &acme.AuthorizationError{Identifier: "a.test"}, want: ReasonChallengeFailed},
		{desc: "connection refused", err: &netErr{}, want: ReasonCAUnreachable},
		{desc: "storage", err: &Failure{Reason: ReasonStorage, Err: errors.New("disk full")}, want: ReasonStorage},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			f := classify(tc.err)
			if f.Reason != tc.want || f.RetryAfter != tc.after {
				t.Errorf("classify = %s, retry after %v; want %s, %v", f.Reason, f.RetryAfter, tc.want, tc.after)
			}
		})
	}
}

type netErr struct{}

func (*netErr) Error() string   { return "dial tcp: connection refused" }
func (*netErr) Timeout() bool   { return false }
func (*netErr) Temporary() bool { return false }
