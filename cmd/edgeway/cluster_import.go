package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/edgeway/edgeway/acme"
	"github.com/edgeway/edgeway/cluster"
)

// cmdCluster runs `edgeway cluster import -c FILE DIR`: it copies an ACME
// storage folder (the acme block's storage of a single instance) into the
// cluster's etcd, sealed. It is idempotent: a key the cluster already has
// with the same value is left, and one it has with another value is kept
// (the cluster's is newer: an instance renewed it) and reported. Order
// journals and challenges are not copied: they belong to a process.
func cmdCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "import" {
		fmt.Fprintf(stderr, "usage: edgeway cluster import -c FILE DIR\n")
		return 2
	}
	fs := flag.NewFlagSet("cluster import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("c", "edgeway.conf", "main configuration `file` (its cluster block names etcd)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "usage: edgeway cluster import -c FILE DIR\n")
		return 2
	}
	_, cfg, code := loadFromFlags("cluster import", []string{"-c", *file}, stderr)
	if cfg == nil {
		return code
	}
	if cfg.Cluster == nil {
		fmt.Fprintf(stderr, "edgeway cluster import: %s has no cluster block\n", *file)
		return 1
	}
	dir, err := acme.NewDir(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "edgeway cluster import: %v\n", err)
		return 1
	}
	n, err := cluster.Start(context.Background(), *cfg.Cluster, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintf(stderr, "edgeway cluster import: %v\n", err)
		return 1
	}
	defer n.Close()
	st, err := importACME(context.Background(), dir, cluster.NewACMEStore(n), stdout)
	if err != nil {
		fmt.Fprintf(stderr, "edgeway cluster import: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "imported %d, unchanged %d, kept the cluster's %d\n", st.imported, st.same, st.kept)
	return 0
}

type importStats struct{ imported, same, kept int }

// importACME copies every key of from that to lacks.
func importACME(ctx context.Context, from, to acme.Storage, out io.Writer) (importStats, error) {
	var st importStats
	keys, err := from.List(ctx, "")
	if err != nil {
		return st, err
	}
	for _, k := range keys {
		if strings.Contains(k, "/orders/") || strings.Contains(k, "/challenges/") {
			continue
		}
		v, err := from.Get(ctx, k)
		if err != nil {
			return st, fmt.Errorf("reading %s: %w", k, err)
		}
		have, err := to.Get(ctx, k)
		switch {
		case err == nil && bytes.Equal(have, v):
			st.same++
		case err == nil:
			st.kept++
			fmt.Fprintf(out, "kept: %s (the cluster holds another value)\n", k)
		case errors.Is(err, acme.ErrNotExist):
			if err := to.Put(ctx, k, v); err != nil {
				return st, fmt.Errorf("writing %s: %w", k, err)
			}
			st.imported++
		default:
			return st, fmt.Errorf("reading %s from the cluster: %w", k, err)
		}
	}
	return st, nil
}
