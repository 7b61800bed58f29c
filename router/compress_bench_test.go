package router

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// compressBenchBodies are answers as an API and a site give them: a 10
// KB JSON list (bench-policy.sh's) and a 30 KB HTML list.
func compressBenchBodies() map[string][]byte {
	var js, html strings.Builder
	js.WriteString("[")
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&js, `{"id":%d,"name":"user-%d","email":"user%d@example.com","active":true,"roles":["reader","writer"],"created":"2026-01-%02dT10:00:00Z"},`, i, i, i, i%28+1)
	}
	js.WriteString(`{"id":0}]`)
	for i := 0; html.Len() < 30000; i++ {
		fmt.Fprintf(&html, "<li class=\"item-%d\"><a href=\"/products/%d?ref=list\">Product number %d, now %d%% off</a></li>\n", i%7, i*37, i, i%50)
	}
	return map[string][]byte{"json": []byte(js.String()), "html": []byte(html.String())}
}

// compressBenchWriter counts what an encoder writes.
type compressBenchWriter struct{ n, writes int }

func (w *compressBenchWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.writes++
	return len(p), nil
}

// BenchmarkCompressEncoder is the CPU of compressing one whole answer
// with a pooled encoder of each coding, as relay does (getEncoder, one
// body, Close, putEncoder), with the compression ratio and the CPU the
// benchmark's thread used per answer (cpu-ns/op, Linux).
func BenchmarkCompressEncoder(b *testing.B) {
	bodies := compressBenchBodies()
	for _, name := range []string{"json", "html"} {
		body := bodies[name]
		for _, coding := range []string{"gzip", "br", "zstd"} {
			b.Run(name+"/"+coding, func(b *testing.B) {
				var w compressBenchWriter
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				// The thread's CPU time, not the wall time: on a busy
				// machine the loop waits for a core.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				cpu := compressThreadCPU()
				for b.Loop() {
					w = compressBenchWriter{}
					e := getEncoder(coding, &w)
					if _, err := e.Write(body); err != nil {
						b.Fatal(err)
					}
					if err := e.Close(); err != nil {
						b.Fatal(err)
					}
					putEncoder(coding, e)
				}
				b.ReportMetric(float64(compressThreadCPU()-cpu)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(len(body))/float64(w.n), "ratio")
				b.ReportMetric(float64(w.writes), "writes/op")
			})
		}
	}
}
