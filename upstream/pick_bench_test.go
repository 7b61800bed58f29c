package upstream

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// BenchmarkPick measures one Pick and Done per policy for 2 and 1,000
// servers: ns and allocations per pick.
func BenchmarkPick(b *testing.B) {
	policies := []conf.Balance{
		{Policy: conf.RoundRobin}, {Policy: conf.LeastRequest}, {Policy: conf.Random},
		{Policy: conf.Hash, HashKey: conf.HashHeader, Name: "X-User"},
		{Policy: conf.Hash, HashKey: conf.HashClientIP},
		{Policy: conf.Sticky, Name: "srv"},
	}
	for _, bal := range policies {
		for _, n := range []int{2, 1000} {
			name := bal.Policy
			if bal.HashKey != "" {
				name += "_" + bal.HashKey
			}
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) {
				cfg := conf.DefaultUpstream("bench")
				for i := range n {
					cfg.Servers = append(cfg.Servers, conf.Server{Addr: fmt.Sprintf("10.0.%d.%d:80", i/256, i%256), Weight: 1 + i%3})
				}
				cfg.Balance = bal
				g := new(group)
				p := newPool(cfg, g, slog.New(slog.DiscardHandler), time.Now, rand.Uint64,
					func(string) *ServerState { return newServerState(g, time.Now(), true) })
				req := &httpmsg.Request{Target: "/x", RemoteAddr: netip.MustParseAddrPort("192.0.2.1:1234"),
					Header: httpmsg.Header{{Name: "X-User", Value: "alice"}, {Name: "Cookie", Value: "srv=" + p.servers[n/2].ID}}}
				b.ReportAllocs()
				for b.Loop() {
					s, err := p.Pick(req, nil)
					if err != nil {
						b.Fatal(err)
					}
					s.Done(Result{Status: 200})
				}
			})
		}
	}
}
