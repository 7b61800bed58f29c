package bodybuf

import "golang.org/x/sys/unix"

// statFS returns the bytes an unprivileged writer may still use in dir's
// file system, and its size.
var statFS = func(dir string) (avail, total int64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, 0, false
	}
	bs := int64(st.Bsize)
	return int64(st.Bavail) * bs, int64(st.Blocks) * bs, true
}

// OnTmpfs reports whether dir is on a tmpfs: its "disk" is memory.
func OnTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}
