package conf

import (
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openWrites tracks, per file in the watched folders, whether a writer
// modified it and has not closed it yet (inotify's IN_MODIFY without its
// IN_CLOSE_WRITE): a file truncated and not yet rewritten, as a shell
// redirect from a slow program leaves it, is not compared until the
// writer is done. fsnotify does not export IN_CLOSE_WRITE, so this is a
// second inotify descriptor over the same folders, read without blocking
// when the watcher is about to compare.
type openWrites struct {
	fd      int
	dirs    map[string]int // folder -> watch descriptor
	names   map[int]string // watch descriptor -> folder
	pending map[string]bool
}

func newOpenWrites() *openWrites {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil // without it the watcher falls back on its debounce alone
	}
	return &openWrites{fd: fd, dirs: map[string]int{}, names: map[int]string{}, pending: map[string]bool{}}
}

// add watches dir; a failure leaves dir to the debounce alone.
func (o *openWrites) add(dir string) {
	if o == nil {
		return
	}
	wd, err := unix.InotifyAddWatch(o.fd, dir, unix.IN_MODIFY|unix.IN_CLOSE_WRITE|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_DELETE)
	if err != nil {
		return
	}
	o.dirs[dir], o.names[wd] = wd, dir
}

func (o *openWrites) remove(dir string) {
	if o == nil {
		return
	}
	if wd, ok := o.dirs[dir]; ok {
		unix.InotifyRmWatch(o.fd, uint32(wd))
		delete(o.dirs, dir)
		delete(o.names, wd)
	}
}

// writing returns those of files (resolved paths) a writer holds open
// after modifying them.
func (o *openWrites) writing(files []string) []string {
	if o == nil {
		return nil
	}
	o.drain()
	var out []string
	for _, f := range files {
		if o.pending[f] {
			out = append(out, f)
		}
	}
	return out
}

// drain reads the queued events.
func (o *openWrites) drain() {
	var buf [16 << 10]byte
	for {
		n, err := unix.Read(o.fd, buf[:])
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameEnd := off + unix.SizeofInotifyEvent + int(ev.Len)
			if nameEnd > n {
				break
			}
			name := buf[off+unix.SizeofInotifyEvent : nameEnd]
			off = nameEnd
			if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
				clear(o.pending) // unknown: let the debounce decide
				continue
			}
			dir, ok := o.names[int(ev.Wd)]
			if !ok {
				continue
			}
			path := filepath.Join(dir, cString(name))
			switch {
			case ev.Mask&unix.IN_MODIFY != 0:
				o.pending[path] = true
			default: // closed after writing, or a new file at that name
				delete(o.pending, path)
			}
		}
	}
}

// cString is b up to its first NUL (inotify pads names with NULs).
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func (o *openWrites) close() {
	if o != nil {
		unix.Close(o.fd)
	}
}
