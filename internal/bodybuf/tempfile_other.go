//go:build !linux

package bodybuf

import "os"

func openTemp(dir string) (*os.File, error) { return openNamed(dir) }
