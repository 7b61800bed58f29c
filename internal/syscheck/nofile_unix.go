//go:build unix

package syscheck

import "syscall"

// rlimitNoFile returns this process's RLIMIT_NOFILE.
func rlimitNoFile() (soft, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	return uint64(r.Cur), uint64(r.Max), nil
}
