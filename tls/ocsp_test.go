package edgetls

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
	"golang.org/x/crypto/ocsp"
)

// responder is an OCSP responder on 127.0.0.1 signing with a test CA.
type responder struct {
	ca  *testCA
	srv *httptest.Server

	mu       sync.Mutex
	mode     string // "good", "revoked", "unknown", "down", "hang"
	validity time.Duration
	fetches  []time.Time
	release  chan struct{} // closed at cleanup: ends hanging requests
}

func newResponder(t *testing.T, ca *testCA, mode string, validity time.Duration) *responder {
	r := &responder{ca: ca, mode: mode, validity: validity, release: make(chan struct{})}
	r.srv = httptest.NewServer(r)
	t.Cleanup(func() {
		close(r.release)
		r.srv.Close()
	})
	return r
}

func (r *responder) set(mode string, validity time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mode, r.validity = mode, validity
}

func (r *responder) fetchTimes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.fetches...)
}

func (r *responder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	mode, validity := r.mode, r.validity
	r.fetches = append(r.fetches, time.Now())
	r.mu.Unlock()
	switch mode {
	case "down":
		http.Error(w, "responder down", http.StatusServiceUnavailable)
		return
	case "hang":
		select {
		case <-req.Context().Done():
		case <-r.release:
		}
		return
	}
	oreq, err := ocsp.ParseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	now := time.Now()
	tmpl := ocsp.Response{SerialNumber: oreq.SerialNumber, ThisUpdate: now.Add(-time.Second),
		NextUpdate: now.Add(validity)}
	switch mode {
	case "good":
		tmpl.Status = ocsp.Good
	case "revoked":
		tmpl.Status, tmpl.RevokedAt, tmpl.RevocationReason = ocsp.Revoked, now.Add(-time.Hour), ocsp.KeyCompromise
	default:
		tmpl.Status = ocsp.Unknown
	}
	resp, err := ocsp.CreateResponse(r.ca.cert, r.ca.cert, tmpl, r.ca.key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/ocsp-response")
	w.Write(resp)
}

// ocspSetup makes a CA, a responder in mode and a store serving a
// certificate for o.test that names the responder, with short timings.
type ocspSetup struct {
	ca   *testCA
	resp *responder
	s    *Store
	logs *logBuf
	srv  *testServer
	leaf *tls.Certificate
	cfg  *conf.TLSStore
}

func newOCSPSetup(t *testing.T, mode string, validity time.Duration) *ocspSetup {
	t.Helper()
	o := &ocspSetup{ca: newTestCA(t, "OCSP CA")}
	o.resp = newResponder(t, o.ca, mode, validity)
	o.leaf = o.ca.issue(t, leafOpts{cn: "o", names: []string{"o.test"}, ocsp: o.resp.srv.URL})
	cf, kf := writePair(t, t.TempDir(), "o", o.leaf)
	o.s, o.logs = newTestStore(t)
	o.s.timing = timing{now: time.Now, ocspMinRefresh: 50 * time.Millisecond, ocspMaxRefresh: time.Hour,
		ocspRetryMin: 10 * time.Millisecond, ocspRetryMax: 100 * time.Millisecond, ocspTimeout: 200 * time.Millisecond}
	o.cfg = &conf.TLSStore{Certificates: []conf.Certificate{{CertFile: cf, KeyFile: kf}}, OCSPStapling: true}
	if err := o.s.Load(o.cfg); err != nil {
		t.Fatal(err)
	}
	o.srv = serverFor(t, o.s, nil)
	return o
}

// staple handshakes and returns the stapled response (nil when none). The
// handshake must succeed whatever the responder does.
func (o *ocspSetup) staple(t *testing.T) []byte {
	t.Helper()
	cs, err := handshake(t, o.srv.addr, &tls.Config{ServerName: "o.test", RootCAs: o.ca.pool()})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return cs.OCSPResponse
}

func (o *ocspSetup) info() OCSPInfo { return o.s.List()[0].OCSP }

func (o *ocspSetup) waitStaple(t *testing.T, what string, cond func([]byte) bool) []byte {
	t.Helper()
	var got []byte
	testutil.Eventually(t, 10*time.Second, func() bool {
		got = o.staple(t)
		return cond(got)
	}, "waiting for %s", what)
	return got
}

func hasStaple(b []byte) bool { return b != nil }
func noStaple(b []byte) bool  { return b == nil }

func (o *ocspSetup) parse(t *testing.T, raw []byte) *ocsp.Response {
	t.Helper()
	r, err := ocsp.ParseResponseForCert(raw, o.leaf.Leaf, o.ca.cert)
	if err != nil {
		t.Fatalf("served staple does not parse: %v", err)
	}
	return r
}

func TestOCSPStapled(t *testing.T) {
	o := newOCSPSetup(t, "good", time.Hour)
	raw := o.waitStaple(t, "a staple", hasStaple)
	r := o.parse(t, raw)
	if r.Status != ocsp.Good || r.SerialNumber.Cmp(o.leaf.Leaf.SerialNumber) != 0 {
		t.Errorf("staple: status %d serial %v, want Good for %v", r.Status, r.SerialNumber, o.leaf.Leaf.SerialNumber)
	}
	info := o.info()
	if !info.Stapled || info.Responder != o.resp.srv.URL || info.LastError != "" ||
		!info.NextUpdate.Equal(r.NextUpdate) {
		t.Errorf("List OCSP = %+v", info)
	}
	// A reload of the same files keeps the staple: no handshake goes
	// without it.
	if err := o.s.Load(o.cfg); err != nil {
		t.Fatal(err)
	}
	if got := o.staple(t); !bytes.Equal(got, raw) {
		t.Error("the staple was lost across a reload")
	}
	// Stapling turned off: the staple goes at once.
	off := *o.cfg
	off.OCSPStapling = false
	if err := o.s.Load(&off); err != nil {
		t.Fatal(err)
	}
	if got := o.staple(t); got != nil {
		t.Error("staple served with ocsp_stapling off")
	}
}

func TestOCSPResponderDownThenUp(t *testing.T) {
	o := newOCSPSetup(t, "down", time.Hour)
	testutil.Eventually(t, 10*time.Second, func() bool { return len(o.resp.fetchTimes()) >= 2 }, "waiting for two failed fetches")
	if got := o.staple(t); got != nil {
		t.Fatal("staple served while the responder is down")
	}
	if info := o.info(); info.Stapled || !strings.Contains(info.LastError, "503") {
		t.Errorf("List OCSP = %+v, want the 503 as last error", info)
	}
	if !strings.Contains(o.logs.String(), "OCSP fetch failed") {
		t.Error("failure not logged")
	}
	o.resp.set("good", time.Hour)
	o.waitStaple(t, "a staple after the responder recovered", hasStaple)
	if info := o.info(); info.LastError != "" {
		t.Errorf("LastError after recovery = %q", info.LastError)
	}
}

func TestOCSPRefreshBeforeNextUpdate(t *testing.T) {
	o := newOCSPSetup(t, "good", 3*time.Second)
	first := o.waitStaple(t, "a staple", hasStaple)
	next := o.parse(t, first).NextUpdate
	second := o.waitStaple(t, "a refreshed staple", func(b []byte) bool { return b != nil && !bytes.Equal(b, first) })
	if o.parse(t, second).NextUpdate.Before(next) {
		t.Error("the refreshed staple expires before the first one")
	}
	f := o.resp.fetchTimes()
	if len(f) < 2 || !f[1].Before(next) {
		t.Errorf("second fetch at %v, want it before NextUpdate %v", f, next)
	}
}

func TestOCSPLastGoodStapleWhileValid(t *testing.T) {
	o := newOCSPSetup(t, "good", 2*time.Second)
	first := o.waitStaple(t, "a staple", hasStaple)
	next := o.parse(t, first).NextUpdate
	o.resp.set("hang", 0)
	// Until NextUpdate, handshakes keep the last good staple (or a fresher
	// one fetched before the hang began).
	if got := o.staple(t); got == nil && time.Now().Before(next) {
		t.Error("no staple while the last good one is valid")
	}
	o.waitStaple(t, "the expired staple to go", noStaple)
	if time.Now().Before(next) {
		t.Error("staple dropped before its NextUpdate")
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(o.info().LastError, "deadline exceeded")
	}, "waiting for a timeout error")
	o.resp.set("good", time.Hour)
	o.waitStaple(t, "a staple after the responder answers again", hasStaple)
}

func TestOCSPRevoked(t *testing.T) {
	o := newOCSPSetup(t, "good", time.Second)
	o.waitStaple(t, "a staple", hasStaple)
	o.resp.set("revoked", time.Hour)
	o.waitStaple(t, "the staple to go after revocation", noStaple)
	if info := o.info(); info.Stapled || !strings.Contains(info.LastError, "revoked") {
		t.Errorf("List OCSP = %+v, want revoked", info)
	}
	if logs := o.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "revoked") {
		t.Errorf("revocation not logged as an error:\n%s", logs)
	}
}

func TestOCSPUnknownNotStapled(t *testing.T) {
	o := newOCSPSetup(t, "unknown", time.Hour)
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(o.info().LastError, "unknown")
	}, "waiting for an unknown status")
	if got := o.staple(t); got != nil {
		t.Error("an Unknown response was stapled")
	}
}

func TestOCSPIssuerNotInChain(t *testing.T) {
	ca := newTestCA(t, "CA")
	r := newResponder(t, ca, "good", time.Hour)
	leaf := ca.issue(t, leafOpts{cn: "lone", names: []string{"lone.test"}, ocsp: r.srv.URL})
	leaf.Certificate = leaf.Certificate[:1]
	cf, kf := writePair(t, t.TempDir(), "lone", leaf)
	s, _ := newTestStore(t)
	if err := s.Load(&conf.TLSStore{Certificates: []conf.Certificate{{CertFile: cf, KeyFile: kf}}, OCSPStapling: true}); err != nil {
		t.Fatal(err)
	}
	if got := s.List()[0].OCSP.LastError; !strings.Contains(got, "issuer") {
		t.Errorf("LastError = %q, want it to say the issuer is missing", got)
	}
	if n := len(r.fetchTimes()); n != 0 {
		t.Errorf("responder asked %d times without an issuer", n)
	}
}
