//go:build !linux

package conf

// openWrites is inotify's close-after-write tracking, which only Linux
// has; elsewhere the watcher relies on its debounce alone.
type openWrites struct{}

func newOpenWrites() *openWrites                { return nil }
func (o *openWrites) add(string)                {}
func (o *openWrites) remove(string)             {}
func (o *openWrites) writing([]string) []string { return nil }
func (o *openWrites) close()                    {}
