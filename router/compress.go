package router

import (
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/httpmsg"
)

// compressPolicy is a route's `compress` block, compiled at load time.
type compressPolicy struct {
	algorithms []string // in order of preference
	types      map[string]bool
	minSize    int64
}

func compileCompress(c *conf.Compress) *compressPolicy {
	if c == nil {
		return nil
	}
	p := &compressPolicy{algorithms: c.Algorithms, types: map[string]bool{}, minSize: c.MinSize}
	for _, t := range c.Types {
		p.types[t] = true
	}
	return p
}

// encoding picks the content coding of a response, "" for none: a
// complete, compressible answer (2xx but 204 and 206, no coding yet, a
// listed type, not no-transform, not known to be small) to a request that
// accepts one of the route's algorithms (the highest q-value, ties in the
// route's order), not HEAD and without Range.
func (p *compressPolicy) encoding(in *httpmsg.Request, status int, h httpmsg.Header, length int64) string {
	if status < 200 || status > 299 || status == 204 || status == 206 || in.Method == "HEAD" ||
		(length >= 0 && length < p.minSize) || in.Header.Get("Range") != "" || h.Get("Content-Encoding") != "" {
		return ""
	}
	if !p.compressible(h) || strings.Contains(strings.ToLower(h.Get("Cache-Control")), "no-transform") {
		return ""
	}
	accept := in.Header.Get("Accept-Encoding")
	best, bestQ := "", 0.0
	for _, a := range p.algorithms {
		if q := codingQ(accept, a); q > bestQ {
			best, bestQ = a, q
		}
	}
	return best
}

// compressible reports whether a response with fields h is of a type the
// route compresses (so that its answers vary by Accept-Encoding).
func (p *compressPolicy) compressible(h httpmsg.Header) bool {
	mt, _, _ := strings.Cut(h.Get("Content-Type"), ";")
	return p.types[strings.ToLower(strings.TrimSpace(mt))]
}

// codingQ is the q-value Accept-Encoding gives coding (RFC 9110
// §12.5.3): its own entry, else `*`'s, else 0. It allocates nothing.
func codingQ(accept, coding string) float64 {
	own, star := -1.0, -1.0
	for entry := range strings.SplitSeq(accept, ",") {
		name, params, _ := strings.Cut(entry, ";")
		name = strings.TrimSpace(name)
		q := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.EqualFold(strings.TrimSpace(k), "q") {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				q = f
			}
		}
		switch {
		case strings.EqualFold(name, coding):
			own = q
		case name == "*":
			star = q
		}
	}
	switch {
	case own >= 0:
		return own
	case star >= 0:
		return star
	}
	return 0
}

// compressedHeader adjusts response fields h for coding: the coding
// named, Vary: Accept-Encoding, no Content-Length (the length changes)
// and a strong ETag made weak (the bytes differ from the identity ones).
func compressedHeader(h httpmsg.Header, coding string) httpmsg.Header {
	out := h[:0]
	for _, f := range h {
		switch {
		case httpmsg.EqualFold(f.Name, "Content-Length"):
			continue
		case httpmsg.EqualFold(f.Name, "ETag") && !strings.HasPrefix(f.Value, "W/"):
			f.Value = "W/" + f.Value
		}
		out = append(out, f)
	}
	return append(out, httpmsg.Field{Name: "Content-Encoding", Value: coding}, httpmsg.Field{Name: "Vary", Value: "Accept-Encoding"})
}

// encoder is a pooled compressor writing to the client.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(io.Writer)
}

// The levels are chosen for throughput at the sizes answers have (10 to
// 30 KB; BenchmarkCompressEncoder, busy 2-core box): gzip 2 takes about
// half the CPU of klauspost's default (5) for 3-7% less ratio; brotli 3
// about two thirds of 4's CPU with the same ratio on JSON (4% less on
// HTML); zstd's fastest level costs less than its default and, with these
// short inputs, compresses them better.
const (
	gzipLevel   = 2
	brotliLevel = 3
	zstdLevel   = zstd.SpeedFastest
)

var encoders = map[string]*sync.Pool{
	"gzip": {New: func() any { w, _ := gzip.NewWriterLevel(nil, gzipLevel); return w }},
	"br":   {New: func() any { return brotli.NewWriterLevel(nil, brotliLevel) }},
	"zstd": {New: func() any {
		w, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstdLevel), zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(1<<20), zstd.WithLowerEncoderMem(true))
		return &zstdEncoder{w}
	}},
}

// zstdEncoder is zstd.Encoder as an encoder (its Reset takes a writer).
type zstdEncoder struct{ *zstd.Encoder }

func (z *zstdEncoder) Reset(w io.Writer) { z.Encoder.Reset(w) }

func getEncoder(coding string, w io.Writer) encoder {
	e := encoders[coding].Get().(encoder)
	e.Reset(w)
	return e
}

func putEncoder(coding string, e encoder) {
	e.Reset(io.Discard) // drop the client's writer
	encoders[coding].Put(e)
}
