//go:build !unix

package syscheck

import "errors"

func rlimitNoFile() (soft, hard uint64, err error) {
	return 0, 0, errors.New("no RLIMIT_NOFILE on this system")
}
