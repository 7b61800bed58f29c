package testgrpc

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	tpb "google.golang.org/grpc/interop/grpc_testing"
)

// The metadata keys of the gRPC interop suite: the server echoes the first
// as initial metadata and the second (binary) as trailing metadata.
const (
	EchoInitialKey  = "x-grpc-test-echo-initial"
	EchoTrailingKey = "x-grpc-test-echo-trailing-bin"
	// MethodKey is the header in which Interop names the method that ran,
	// so that a client can tell a call delivered to the wrong method.
	MethodKey = "x-served-method"
)

// Interop is the gRPC interop suite's TestService
// (grpc/interop/grpc_testing), served with the real protobuf messages:
// payloads of the sizes asked for, response_status echoed as the call's
// status, the echo metadata keys honoured, UnimplementedCall left
// unimplemented. A response payload's bytes repeat the first byte of the
// request's payload (zero without one), so that a client can tell its own
// answer from another call's.
type Interop struct {
	tpb.UnimplementedTestServiceServer
}

// NewInteropServer returns a gRPC server with Interop registered; every
// response carries MethodKey.
func NewInteropServer() *grpc.Server {
	srv := grpc.NewServer(
		grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			grpc.SetHeader(ctx, metadata.Pairs(MethodKey, info.FullMethod))
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ss.SetHeader(metadata.Pairs(MethodKey, info.FullMethod))
			return h(srv, ss)
		}),
	)
	tpb.RegisterTestServiceServer(srv, Interop{})
	return srv
}

// EmptyCall answers an empty message.
func (Interop) EmptyCall(ctx context.Context, _ *tpb.Empty) (*tpb.Empty, error) {
	if err := echoMetadata(ctx, nil); err != nil {
		return nil, err
	}
	return &tpb.Empty{}, nil
}

// UnaryCall answers a payload of response_size bytes, or response_status.
func (Interop) UnaryCall(ctx context.Context, in *tpb.SimpleRequest) (*tpb.SimpleResponse, error) {
	if err := echoMetadata(ctx, nil); err != nil {
		return nil, err
	}
	if st := in.GetResponseStatus(); st.GetCode() != 0 {
		return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	return &tpb.SimpleResponse{Payload: Payload(int(in.GetResponseSize()), fillOf(in.GetPayload()))}, nil
}

// StreamingOutputCall sends one payload per response parameter.
func (Interop) StreamingOutputCall(in *tpb.StreamingOutputCallRequest, s grpc.ServerStreamingServer[tpb.StreamingOutputCallResponse]) error {
	return respond(s, in)
}

// StreamingInputCall answers the sum of the payload sizes it received.
func (Interop) StreamingInputCall(s grpc.ClientStreamingServer[tpb.StreamingInputCallRequest, tpb.StreamingInputCallResponse]) error {
	sum := 0
	for {
		in, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return s.SendAndClose(&tpb.StreamingInputCallResponse{AggregatedPayloadSize: int32(sum)})
		}
		if err != nil {
			return err
		}
		sum += len(in.GetPayload().GetBody())
	}
}

// FullDuplexCall answers each request as it arrives.
func (Interop) FullDuplexCall(s grpc.BidiStreamingServer[tpb.StreamingOutputCallRequest, tpb.StreamingOutputCallResponse]) error {
	if err := echoMetadata(s.Context(), s); err != nil {
		return err
	}
	for {
		in, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := respond(s, in); err != nil {
			return err
		}
	}
}

// HalfDuplexCall answers every request once the client has sent them all.
func (Interop) HalfDuplexCall(s grpc.BidiStreamingServer[tpb.StreamingOutputCallRequest, tpb.StreamingOutputCallResponse]) error {
	var all []*tpb.StreamingOutputCallRequest
	for {
		in, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		all = append(all, in)
	}
	for _, in := range all {
		if err := respond(s, in); err != nil {
			return err
		}
	}
	return nil
}

type sender interface {
	Send(*tpb.StreamingOutputCallResponse) error
	Context() context.Context
}

// respond sends the payloads in asks for, or fails with its status.
func respond(s sender, in *tpb.StreamingOutputCallRequest) error {
	if st := in.GetResponseStatus(); st.GetCode() != 0 {
		return status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	fill := fillOf(in.GetPayload())
	for _, p := range in.GetResponseParameters() {
		if us := p.GetIntervalUs(); us > 0 {
			select {
			case <-time.After(time.Duration(us) * time.Microsecond):
			case <-s.Context().Done():
				return s.Context().Err()
			}
		}
		if err := s.Send(&tpb.StreamingOutputCallResponse{Payload: Payload(int(p.GetSize()), fill)}); err != nil {
			return err
		}
	}
	return nil
}

// echoMetadata sends the echo keys back: the initial one as header (on
// ss, or the unary call's), the trailing one as trailer.
func echoMetadata(ctx context.Context, ss grpc.ServerStream) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(EchoInitialKey); len(v) > 0 {
		h := metadata.Pairs(EchoInitialKey, v[0])
		var err error
		if ss != nil {
			err = ss.SetHeader(h)
		} else {
			err = grpc.SetHeader(ctx, h)
		}
		if err != nil {
			return err
		}
	}
	if v := md.Get(EchoTrailingKey); len(v) > 0 {
		t := metadata.Pairs(EchoTrailingKey, v[0])
		if ss != nil {
			ss.SetTrailer(t)
		} else if err := grpc.SetTrailer(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// Payload is a payload of n bytes, each fill.
func Payload(n int, fill byte) *tpb.Payload {
	b := make([]byte, n)
	if fill != 0 {
		for i := range b {
			b[i] = fill
		}
	}
	return &tpb.Payload{Type: tpb.PayloadType_COMPRESSABLE, Body: b}
}

func fillOf(p *tpb.Payload) byte {
	if b := p.GetBody(); len(b) > 0 {
		return b[0]
	}
	return 0
}
