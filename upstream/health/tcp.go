package health

import (
	"context"
	"errors"
	"net"
	"os"
)

// TCP passes when a connection to the server opens.
type TCP struct{}

// Check dials addr and closes the connection.
func (TCP) Check(ctx context.Context, addr string) Result {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Result{Reason: "connect: " + errText(err)}
	}
	c.Close()
	return Result{OK: true, Reason: "connected"}
}

// errText shortens a net error to its cause ("connection refused").
func errText(err error) string {
	var sys *os.SyscallError
	if errors.As(err, &sys) {
		return sys.Err.Error()
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}
