package listeners

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/testutil"
	"github.com/edgeway/edgeway/router"
	"github.com/edgeway/edgeway/routes/rule"
)

// BenchmarkH2TLSServerGET is BenchmarkH2ServerGET over TLS (ALPN h2) on
// edgeway's own server: one GET at a time (the connection is idle after
// each answer, but not for the park grace: it is not parked between
// them), and 16 at a time.
func BenchmarkH2TLSServerGET(b *testing.B) {
	b.Run("1", func(b *testing.B) { benchH2TLSServerGET(b, 1) })
	b.Run("16_in_flight", func(b *testing.B) { benchH2TLSServerGET(b, 16) })
}

func benchH2TLSServerGET(b *testing.B, inFlight int) {
	cfg := testConfig()
	cfg.Name, cfg.H2Server, cfg.Protocols = "web", "own", []string{"tls", "http1", "h2"}
	r, err := rule.Parse(rule.HTTP, "PathPrefix(`/`)")
	if err != nil {
		b.Fatal(err)
	}
	rt := router.New(router.Options{Log: slog.New(slog.DiscardHandler)})
	defer rt.Close()
	err = rt.Apply(&conf.Config{Listeners: []conf.Listener{cfg}, Routes: []conf.Route{{Name: "r", Rule: r,
		RuleText: "PathPrefix(`/`)", Priority: 1, Middlewares: []conf.Middleware{{Kind: conf.Respond, Code: 200, Arg: "ok"}}}}})
	if err != nil {
		b.Fatal(err)
	}
	cert := testutil.NewCA(b, "bench CA").TLSCert(b, testutil.IssueOptions{}, "example.com")
	s, err := ListenWith(cfg, rt.Proxy("web"), slog.New(slog.NewTextHandler(io.Discard, nil)), Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Shutdown(ctx)
	}()
	c, err := tls.Dial("tcp", s.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	bc := newBenchH2Client(c)
	bc.get(1, 1) // the settings exchange
	b.ReportAllocs()
	b.ResetTimer()
	id := uint32(3)
	for i := 0; i < b.N; i += inFlight {
		n := min(inFlight, b.N-i)
		if err := bc.get(id, n); err != nil {
			b.Fatal(err)
		}
		id += 2 * uint32(n)
	}
}
