package router

import (
	"net/netip"
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
