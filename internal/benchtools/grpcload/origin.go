package main

import (
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"

	"github.com/edgeway/edgeway/internal/testgrpc"
)

// newOrigin returns a grpc-go server with testgrpc's Echo registered,
// messages carried as raw bytes.
func newOrigin() *grpc.Server {
	srv := grpc.NewServer(grpc.ForceServerCodec(testgrpc.Codec{}))
	srv.RegisterService(&testgrpc.Desc, testgrpc.Echo{})
	return srv
}

// origin serves Echo over h2c on addr until the process ends, after
// writing "LISTENING addr" to out.
func origin(addr string, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	fmt.Fprintf(out, "LISTENING %s\n", ln.Addr())
	if err := newOrigin().Serve(ln); err != nil {
		return fmt.Errorf("origin: serving: %w", err)
	}
	return nil
}
