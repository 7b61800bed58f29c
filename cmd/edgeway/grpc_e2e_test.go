package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/edgeway/edgeway/internal/testgrpc"
	"github.com/edgeway/edgeway/internal/testutil"
)

// grpcThroughEdgeway starts a gRPC server, an edgeway that routes to it
// through an h2c upstream, and a gRPC client connected to edgeway over
// h2c, or over TLS (h2 by ALPN) when overTLS is set.
func grpcThroughEdgeway(t *testing.T, overTLS bool) *grpc.ClientConn {
	return grpcThroughEdgewayOn(t, grpcFront(overTLS, "own"))
}

// grpcThroughEdgewayOn is grpcThroughEdgeway with the client on front.
func grpcThroughEdgewayOn(t *testing.T, front grpcFrontSpec) *grpc.ClientConn {
	t.Helper()
	srv := grpc.NewServer(grpc.ForceServerCodec(testgrpc.Codec{}))
	srv.RegisterService(&testgrpc.Desc, testgrpc.Echo{})
	_, cc := grpcProxiedOn(t, srv, front, grpc.WithDefaultCallOptions(grpc.ForceCodec(testgrpc.Codec{})))
	return cc
}

// grpcFrontSpec is the edgeway listener a gRPC client connects to: h2c
// or TLS, and its HTTP/2 server (h2_server).
type grpcFrontSpec struct {
	tls      bool
	h2Server string // "xnet" or "own"
}

func grpcFront(overTLS bool, h2Server string) grpcFrontSpec {
	return grpcFrontSpec{tls: overTLS, h2Server: h2Server}
}

// grpcProxied serves srv on loopback behind an edgeway whose routes send
// every path to it through an h2c upstream, and returns the edgeway
// process and a client connected to it over h2c, or over TLS (h2 by ALPN)
// when overTLS is set.
func grpcProxied(t *testing.T, srv *grpc.Server, overTLS bool, opts ...grpc.DialOption) (*testutil.Proc, *grpc.ClientConn) {
	t.Helper()
	return grpcProxiedOn(t, srv, grpcFront(overTLS, "own"), opts...)
}

// grpcProxiedOn is grpcProxied with the client on front.
func grpcProxiedOn(t *testing.T, srv *grpc.Server, front grpcFrontSpec, opts ...grpc.DialOption) (*testutil.Proc, *grpc.ClientConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	routes := fmt.Sprintf("upstream grpc {\n  server %s\n  protocol h2c\n}\nroute rpc {\n  match PathPrefix(`/`)\n  to grpc\n}\n", ln.Addr())
	extra, name := "", ""
	switch {
	case front.tls:
		extra = "tls { self_signed grpc.test }\nlisten sec { addr 127.0.0.1:0\n protocols tls h2\n h2_server " + front.h2Server + " }\n"
		name = "sec"
	case front.h2Server != "own": // web, the default listener, runs own
		extra = "listen front { addr 127.0.0.1:0\n protocols http1 h2c\n h2_server " + front.h2Server + " }\n"
		name = "front"
	}
	p, base, _ := startEdgeway(t, extra, map[string]string{"grpc.routes": routes})
	target, creds := strings.TrimPrefix(base, "http://"), insecure.NewCredentials()
	if name != "" {
		target = p.Addrs(t, 2)[name]
	}
	if front.tls {
		// The certificate is made at start, in memory: trust it blindly,
		// the point here is the HTTP/2 over TLS path.
		creds = credentials.NewTLS(&tls.Config{ServerName: "grpc.test", InsecureSkipVerify: true})
	}
	cc, err := grpc.NewClient("passthrough:///"+target, append(opts, grpc.WithTransportCredentials(creds))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return p, cc
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestGRPCThroughH2CUpstream(t *testing.T) {
	t.Run("h2c front", func(t *testing.T) { testGRPC(t, grpcThroughEdgeway(t, false)) })
	t.Run("TLS front", func(t *testing.T) { testGRPC(t, grpcThroughEdgeway(t, true)) })
	t.Run("xnet h2c front", func(t *testing.T) { testGRPC(t, grpcThroughEdgewayOn(t, grpcFront(false, "xnet"))) })
	t.Run("xnet TLS front", func(t *testing.T) { testGRPC(t, grpcThroughEdgewayOn(t, grpcFront(true, "xnet"))) })
}

// testGRPC makes every kind of call on cc.
func testGRPC(t *testing.T, cc *grpc.ClientConn) {
	t.Run("unary", func(t *testing.T) {
		var out []byte
		if err := cc.Invoke(callCtx(t), testgrpc.Unary, []byte("hello"), &out); err != nil || string(out) != "hello" {
			t.Fatalf("got %q, %v; want hello", out, err)
		}
	})

	t.Run("server streaming", func(t *testing.T) {
		s, err := cc.NewStream(callCtx(t), testgrpc.Streams(testgrpc.ServerStream), testgrpc.ServerStream)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SendMsg([]byte("5")); err != nil {
			t.Fatal(err)
		}
		s.CloseSend()
		var got []string
		for {
			var m []byte
			err := s.RecvMsg(&m)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(m))
		}
		if strings.Join(got, ",") != "0,1,2,3,4" {
			t.Errorf("got %q, want 0..4", got)
		}
	})

	t.Run("client streaming", func(t *testing.T) {
		s, err := cc.NewStream(callCtx(t), testgrpc.Streams(testgrpc.ClientStream), testgrpc.ClientStream)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"a", "b", "c"} {
			if err := s.SendMsg([]byte(m)); err != nil {
				t.Fatal(err)
			}
		}
		s.CloseSend()
		var out []byte
		if err := s.RecvMsg(&out); err != nil || string(out) != "a,b,c" {
			t.Errorf("got %q, %v; want a,b,c", out, err)
		}
	})

	// Each message's echo comes back before the next is sent: the
	// request body streams while the response does (full duplex).
	t.Run("bidi interleaved", func(t *testing.T) {
		s, err := cc.NewStream(callCtx(t), testgrpc.Streams(testgrpc.Bidi), testgrpc.Bidi)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			msg := "m" + strconv.Itoa(i)
			if err := s.SendMsg([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			var out []byte
			if err := s.RecvMsg(&out); err != nil || string(out) != "echo:"+msg {
				t.Fatalf("message %d: got %q, %v; want echo:%s", i, out, err, msg)
			}
		}
		s.CloseSend()
		var out []byte
		if err := s.RecvMsg(&out); !errors.Is(err, io.EOF) {
			t.Errorf("after CloseSend: %v, want io.EOF (status OK)", err)
		}
	})

	t.Run("error status with trailer", func(t *testing.T) {
		var trailer metadata.MD
		var out []byte
		err := cc.Invoke(callCtx(t), testgrpc.Unary, []byte(testgrpc.Fail), &out, grpc.Trailer(&trailer))
		st, _ := status.FromError(err)
		if st.Code() != codes.PermissionDenied || st.Message() != testgrpc.FailMessage {
			t.Errorf("status %v %q, want PermissionDenied %q", st.Code(), st.Message(), testgrpc.FailMessage)
		}
		if got := trailer.Get(testgrpc.FailTrailerKey); len(got) != 1 || got[0] != testgrpc.FailTrailerValue {
			t.Errorf("trailer %s = %q, want %q", testgrpc.FailTrailerKey, got, testgrpc.FailTrailerValue)
		}
	})

	t.Run("1 MiB messages", func(t *testing.T) {
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
		var out []byte
		if err := cc.Invoke(callCtx(t), testgrpc.Unary, big, &out); err != nil || !bytes.Equal(out, big) {
			t.Fatalf("got %d bytes, %v; want the %d sent", len(out), err, len(big))
		}
		s, err := cc.NewStream(callCtx(t), testgrpc.Streams(testgrpc.Bidi), testgrpc.Bidi)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := s.SendMsg(big); err != nil {
				t.Fatal(err)
			}
			if err := s.RecvMsg(&out); err != nil || len(out) != len(big)+5 || !bytes.Equal(out[5:], big) {
				t.Fatalf("bidi echo: %d bytes, %v", len(out), err)
			}
		}
		s.CloseSend()
	})

	// Calls of every size at once share the upstream connection: each
	// answer is its own call's message, whole (the upstream writer sends
	// many streams' frames in one write, and makes writers wait past
	// 64 KiB queued).
	t.Run("many concurrent calls", func(t *testing.T) {
		const callers, calls = 32, 8
		var wg sync.WaitGroup
		for w := range callers {
			wg.Go(func() {
				for i := range calls {
					msg := bytes.Repeat([]byte{byte('a' + w%26)}, (w*calls+i)*1031%(200<<10))
					msg = append(msg, strconv.Itoa(w*calls+i)...)
					var out []byte
					if err := cc.Invoke(callCtx(t), testgrpc.Unary, msg, &out); err != nil || !bytes.Equal(out, msg) {
						t.Errorf("caller %d call %d: %d bytes back, %v; want its %d", w, i, len(out), err, len(msg))
						return
					}
				}
			})
		}
		wg.Wait()
	})

	// The client's deadline travels as grpc-timeout; the server sees it.
	t.Run("deadline propagation", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var out []byte
		if err := cc.Invoke(ctx, testgrpc.Unary, []byte(testgrpc.Deadline), &out); err != nil {
			t.Fatal(err)
		}
		ms, err := strconv.Atoi(string(out))
		if err != nil || ms <= 0 || ms > 30_000 {
			t.Errorf("server saw %q ms left, want a deadline of at most 30s", out)
		}
	})
}
