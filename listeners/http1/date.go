package http1

import (
	"net/http"
	"sync/atomic"
	"time"
)

// dateCache holds the Date field value of the current second, formatted
// once per second whatever the request rate (RFC 9110 §6.6.1: an origin
// with a clock sends Date; nginx and net/http do).
type dateCache struct {
	v atomic.Pointer[dateValue]
}

type dateValue struct {
	sec int64
	b   []byte // "Mon, 02 Jan 2006 15:04:05 GMT"
}

var dates dateCache

// get returns the formatted date for now; the slice must not be modified.
func (d *dateCache) get(now time.Time) []byte {
	sec := now.Unix()
	if v := d.v.Load(); v != nil && v.sec == sec {
		return v.b
	}
	v := &dateValue{sec: sec, b: now.UTC().AppendFormat(make([]byte, 0, 29), http.TimeFormat)}
	d.v.Store(v)
	return v.b
}
