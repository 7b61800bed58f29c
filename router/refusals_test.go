package router

import (
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// TestRefusalLogBudget: a second's refusal lines stop at the budget; the
// first line of the next second says how many were left out.
func TestRefusalLogBudget(t *testing.T) {
	t.Parallel()
	var l refusalLog
	now := time.Unix(1000, 0)
	written := 0
	for range maxRefusalLines + 5 {
		if ok, _ := l.take(now); ok {
			written++
		}
	}
	if written != maxRefusalLines {
		t.Fatalf("%d lines in one second, want %d", written, maxRefusalLines)
	}
	ok, suppressed := l.take(now.Add(time.Second))
	if !ok || suppressed != 5 {
		t.Fatalf("next second: ok %v, suppressed %d, want true, 5", ok, suppressed)
	}
}

// TestRefusedWithoutAccessLog: with the access log off (no AccessLog) a
// refusal is still counted, and answering it does not panic.
func TestRefusedWithoutAccessLog(t *testing.T) {
	t.Parallel()
	m := NewMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	r := New(Options{Metrics: m})
	r.Refused(httpmsg.Refusal{Listener: "web", Protocol: "HTTP/1.1", Status: 400, Reason: "invalid_host",
		Remote: netip.MustParseAddrPort("127.0.0.1:5000")})
	key := "edgeway_requests_refused_total{listener=web,protocol=HTTP/1.1,reason=invalid_host}"
	if v := gather(t, reg)[key]; v != 1 {
		t.Errorf("%s = %v, want 1", key, v)
	}
}

// TestRefusalAttrs: a connection refused before HTTP (Status 0) has no
// status field; a refused request has one.
func TestRefusalAttrs(t *testing.T) {
	t.Parallel()
	remote := netip.MustParseAddrPort("192.0.2.1:4000")
	for _, c := range []struct {
		desc string
		ref  httpmsg.Refusal
		want string
	}{
		{desc: "request", ref: httpmsg.Refusal{Listener: "web", Protocol: "HTTP/2", Status: 431, Reason: httpmsg.ReasonHeadTooLarge, Remote: remote},
			want: "listener=web protocol=HTTP/2 client=192.0.2.1:4000 status=431 reason=request_head_too_large"},
		{desc: "connection", ref: httpmsg.Refusal{Listener: "web", Protocol: httpmsg.ProtoTLS, Reason: httpmsg.ReasonTLSHandshakeFailed, Remote: remote},
			want: "listener=web protocol=tls client=192.0.2.1:4000 reason=tls_handshake_failed"},
		{desc: "no client", ref: httpmsg.Refusal{Listener: "web", Protocol: "HTTP/3", Status: 400, Reason: httpmsg.ReasonInvalidHost},
			want: "listener=web protocol=HTTP/3 status=400 reason=invalid_host"},
	} {
		t.Run(c.desc, func(t *testing.T) {
			t.Parallel()
			var parts []string
			for _, a := range refusalAttrs(c.ref, 0) {
				parts = append(parts, a.String())
			}
			if got := strings.Join(parts, " "); got != c.want {
				t.Errorf("got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestRefusedFloodAllocations: past the second's line budget a refusal
// is a count only, so that a flood (a TLS scanner, a broken client)
// costs next to nothing per connection.
func TestRefusedFloodAllocations(t *testing.T) {
	r := New(Options{AccessLog: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics()})
	ref := httpmsg.Refusal{Listener: "web", Protocol: httpmsg.ProtoTLS, Reason: httpmsg.ReasonTLSHandshakeFailed, Remote: netip.MustParseAddrPort("192.0.2.1:4000")}
	for range maxRefusalLines + 1 {
		r.Refused(ref) // spend the budget (and make the series)
	}
	// The budget is per second; a run that crosses a second writes up to
	// maxRefusalLines lines, which allocate, but well under one a
	// refusal on average (AllocsPerRun's integer average stays 0).
	if n := testing.AllocsPerRun(1000, func() { r.Refused(ref) }); n != 0 {
		t.Errorf("%v allocations a refusal past the budget, want 0", n)
	}
}

// BenchmarkRefusedPastBudget is the cost of one refusal in a flood: a
// count, no line.
func BenchmarkRefusedPastBudget(b *testing.B) {
	r := New(Options{AccessLog: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics()})
	ref := httpmsg.Refusal{Listener: "web", Protocol: httpmsg.ProtoTLS, Reason: httpmsg.ReasonTLSHandshakeFailed, Remote: netip.MustParseAddrPort("192.0.2.1:4000")}
	for range maxRefusalLines + 1 {
		r.Refused(ref)
	}
	b.ReportAllocs()
	for b.Loop() {
		r.Refused(ref)
	}
}
