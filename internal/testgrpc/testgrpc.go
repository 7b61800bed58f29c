// Package testgrpc is a small gRPC service for tests, written without
// protoc: a hand-built grpc.ServiceDesc whose messages are raw bytes,
// carried by Codec (pass it with grpc.ForceServerCodec and
// grpc.ForceCodec). It exercises every call shape: unary, server, client
// and bidi streaming, an error status with trailing metadata, and the
// deadline the server sees.
package testgrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Codec marshals *[]byte (or []byte) as the bytes themselves.
type Codec struct{}

// Marshal returns the bytes of v, a *[]byte or []byte.
func (Codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *[]byte:
		return *m, nil
	case []byte:
		return m, nil
	}
	return nil, fmt.Errorf("testgrpc: cannot marshal %T", v)
}

// Unmarshal copies data into v, a *[]byte.
func (Codec) Unmarshal(data []byte, v any) error {
	m, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("testgrpc: cannot unmarshal into %T", v)
	}
	*m = append((*m)[:0], data...)
	return nil
}

// Name is the codec's content subtype.
func (Codec) Name() string { return "raw" }

// The full method names.
const (
	Unary        = "/edgeway.test.Echo/Unary"
	ServerStream = "/edgeway.test.Echo/ServerStream"
	ClientStream = "/edgeway.test.Echo/ClientStream"
	Bidi         = "/edgeway.test.Echo/Bidi"
)

// Fail, sent to Unary, is answered with status PermissionDenied, message
// FailMessage and the trailer FailTrailerKey: FailTrailerValue.
const (
	Fail             = "fail"
	FailMessage      = "denied: quota exceeded for tenant 7"
	FailTrailerKey   = "x-reason"
	FailTrailerValue = "quota"
	// Deadline, sent to Unary, is answered with the milliseconds left
	// until the call's deadline, or "none".
	Deadline = "deadline"
)

// Desc is the service; register it with srv.RegisterService(&Desc, Echo{}).
var Desc = grpc.ServiceDesc{
	ServiceName: "edgeway.test.Echo",
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Unary", Handler: unary}},
	Streams: []grpc.StreamDesc{
		{StreamName: "ServerStream", Handler: serverStream, ServerStreams: true},
		{StreamName: "ClientStream", Handler: clientStream, ClientStreams: true},
		{StreamName: "Bidi", Handler: bidi, ServerStreams: true, ClientStreams: true},
	},
	Metadata: "testgrpc",
}

// Echo is the service's implementation (stateless).
type Echo struct{}

// Streams returns the StreamDesc of a streaming method, for
// ClientConn.NewStream.
func Streams(method string) *grpc.StreamDesc {
	for i := range Desc.Streams {
		if "/"+Desc.ServiceName+"/"+Desc.Streams[i].StreamName == method {
			return &Desc.Streams[i]
		}
	}
	return nil
}

// unary echoes its message; Fail and Deadline are answered as documented.
func unary(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in []byte
	if err := dec(&in); err != nil {
		return nil, err
	}
	switch string(in) {
	case Fail:
		grpc.SetTrailer(ctx, metadata.Pairs(FailTrailerKey, FailTrailerValue))
		return nil, status.Error(codes.PermissionDenied, FailMessage)
	case Deadline:
		dl, ok := ctx.Deadline()
		if !ok {
			return []byte("none"), nil
		}
		return []byte(strconv.FormatInt(time.Until(dl).Milliseconds(), 10)), nil
	}
	return in, nil
}

// serverStream answers a decimal count n with n messages "0", "1", ....
func serverStream(_ any, ss grpc.ServerStream) error {
	var in []byte
	if err := ss.RecvMsg(&in); err != nil {
		return err
	}
	n, err := strconv.Atoi(string(in))
	if err != nil {
		return status.Error(codes.InvalidArgument, "want a count")
	}
	for i := range n {
		if err := ss.SendMsg([]byte(strconv.Itoa(i))); err != nil {
			return err
		}
	}
	return nil
}

// clientStream answers the messages it received, joined by ",".
func clientStream(_ any, ss grpc.ServerStream) error {
	var all []byte
	for i := 0; ; i++ {
		var in []byte
		err := ss.RecvMsg(&in)
		if errors.Is(err, io.EOF) {
			return ss.SendMsg(all)
		}
		if err != nil {
			return err
		}
		if i > 0 {
			all = append(all, ',')
		}
		all = append(all, in...)
	}
}

// bidi answers each message with "echo:" and the message, at once.
func bidi(_ any, ss grpc.ServerStream) error {
	for {
		var in []byte
		err := ss.RecvMsg(&in)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ss.SendMsg(append([]byte("echo:"), in...)); err != nil {
			return err
		}
	}
}
