package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// cmdH3Get is `edgeway h3get [-k] [-i] URL`: one
// GET over HTTP/3, for trying an h3 listener without a curl built with
// HTTP/3. It prints the body (with -i, the status line and fields
// first) and exits 0 on any answer, 1 when none came.
func cmdH3Get(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("h3get", flag.ContinueOnError)
	fs.SetOutput(stderr)
	insecure := fs.Bool("k", false, "accept any certificate (a self_signed one)")
	head := fs.Bool("i", false, "print the status line and the response fields")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: edgeway h3get [-k] [-i] [-timeout D] https://HOST[:PORT]/PATH")
		return 2
	}
	tr := &http3.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: *insecure}}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fs.Arg(0), nil)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway h3get: %v\n", err)
		return 2
	}
	res, err := tr.RoundTrip(req)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway h3get: %v\n", err)
		return 1
	}
	defer res.Body.Close()
	if *head {
		fmt.Fprintf(stdout, "%s %s\n", res.Proto, res.Status)
		names := make([]string, 0, len(res.Header))
		for name := range res.Header {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			for _, v := range res.Header[name] {
				fmt.Fprintf(stdout, "%s: %s\n", name, v)
			}
		}
		fmt.Fprintln(stdout)
	}
	if _, err := io.Copy(stdout, res.Body); err != nil {
		fmt.Fprintf(stderr, "edgeway h3get: reading the body: %v\n", err)
		return 1
	}
	return 0
}
