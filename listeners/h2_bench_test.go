package listeners

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"

	"golang.org/x/net/http2"

	"github.com/edgeway/edgeway/internal/httpmsg"
)

// BenchmarkH2Guard serves small GETs over one h2c connection, with the
// guard in front of x/net and without, to show what the guard costs per
// request (ns/op and allocs/op are per request).
func BenchmarkH2Guard(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		name := "bare"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			h := httpmsg.HandlerFunc(func(w httpmsg.ResponseWriter, r *httpmsg.Request) {
				w.WriteHead(200, nil, 2)
				w.Write([]byte("ok"))
			})
			cfg := testConfig()
			cfg.H2Server = "xnet" // the guard is x/net's
			f, err := newH2Front(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					if guarded {
						go f.serve(c)
					} else {
						go f.srv.ServeConn(c, &http2.ServeConnOpts{BaseConfig: f.base, Handler: f.base.Handler})
					}
				}
			}()
			tr := &http2.Transport{AllowHTTP: true, DialTLS: func(network, addr string, _ *tls.Config) (net.Conn, error) {
				return net.Dial(network, addr)
			}}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			url := "http://" + ln.Addr().String() + "/"
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := c.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
			})
		})
	}
}
