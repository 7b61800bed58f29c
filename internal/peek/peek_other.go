//go:build !linux

package peek

import (
	"errors"
	"syscall"
)

// Peek needs MSG_PEEK through Linux's socket layer; elsewhere it returns
// errors.ErrUnsupported.
func Peek(syscall.RawConn, []byte, Complete) (int, error) { return 0, errors.ErrUnsupported }

// Consume returns errors.ErrUnsupported outside Linux.
func Consume(syscall.RawConn, []byte) error { return errors.ErrUnsupported }
