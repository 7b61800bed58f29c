// Command bulkorigin is the origin of scripts/bench-bulk.sh: GET /bytes/N
// answers N bytes (with Content-Length, at most 4 GiB) from a pattern
// held in memory, and any request with a body has it read whole and
// answered with its length, so that what a bulk transfer through a
// proxy costs can be set against the same transfer made directly.
//
//	bulkorigin -addr 127.0.0.1:29001
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
)

// maxBytes bounds GET /bytes/N.
const maxBytes = 4 << 30

func main() {
	addr := flag.String("addr", "127.0.0.1:29001", "listen address")
	flag.Parse()
	block := make([]byte, 256<<10)
	for i := range block {
		block[i] = 'a' + byte(i%26)
	}
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			n, err := io.CopyBuffer(io.Discard, r.Body, make([]byte, 256<<10))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintln(w, n)
			return
		}
		s, ok := strings.CutPrefix(r.URL.Path, "/bytes/")
		n, err := strconv.ParseInt(s, 10, 64)
		if !ok || err != nil || n < 0 || n > maxBytes {
			http.Error(w, "GET /bytes/N, 0 <= N <= 4GiB", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		if r.Method == http.MethodHead {
			return
		}
		for n > 0 {
			k := min(n, int64(len(block)))
			if _, err := w.Write(block[:k]); err != nil {
				return
			}
			n -= k
		}
	}
	log.Fatal((&http.Server{Addr: *addr, Handler: http.HandlerFunc(h)}).ListenAndServe())
}
