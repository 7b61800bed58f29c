package health

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	goproxy "github.com/pires/go-proxyproto"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/edgeway/edgeway/conf"
)

// TestCheckSendsProxyLocal: a pool with send_proxy checks servers that
// require a PROXY header; the check's header says LOCAL (the proxy's own
// connection), v1 and v2.
func TestCheckSendsProxyLocal(t *testing.T) {
	for _, v := range []string{"v1", "v2"} {
		t.Run(v, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			got := make(chan goproxy.ProtocolVersionAndCommand, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				h, err := goproxy.Read(br)
				if err != nil {
					got <- 0
					return
				}
				got <- h.Command
				if _, err := http.ReadRequest(br); err == nil {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
				}
			}()
			r := CheckTimeout(context.Background(), New(conf.DefaultHealthCheck(), Options{SendProxy: v}), ln.Addr().String(), checkTimeout)
			if cmd := <-got; cmd != goproxy.LOCAL {
				t.Fatalf("the server read command %v, want LOCAL", cmd)
			}
			if !r.OK {
				t.Fatalf("check failed: %+v", r)
			}
		})
	}
}

// TestCheckOverH2C: a pool with protocol h2c checks its servers over
// HTTP/2 with prior knowledge, which an HTTP/2-only server (gRPC) needs.
func TestCheckOverH2C(t *testing.T) {
	srv := httptest.NewServer(h2c.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			w.WriteHeader(505)
			return
		}
		io.WriteString(w, "h2 ok")
	}), &http2.Server{}))
	t.Cleanup(srv.Close)
	cfg := conf.DefaultHealthCheck()
	cfg.Body = "h2 ok"
	if r := CheckTimeout(context.Background(), New(cfg, Options{H2C: true}), srv.Listener.Addr().String(), checkTimeout); !r.OK {
		t.Fatalf("h2c check failed: %+v", r)
	}
	if r := CheckTimeout(context.Background(), New(cfg, Options{}), srv.Listener.Addr().String(), checkTimeout); r.OK {
		t.Fatalf("an HTTP/1 check of the HTTP/2-only answer passed: %+v", r)
	}
}
