//go:build !linux

package bodybuf

var statFS = func(string) (avail, total int64, ok bool) { return 0, 0, false }

// OnTmpfs reports whether dir is on a tmpfs (never known here).
func OnTmpfs(string) bool { return false }
