package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/edgeway/edgeway/acme"
	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// TestClusterImport: `edgeway cluster import` copies an ACME storage
// folder into etcd, sealed (no private key readable in etcd), skips
// order journals, and a second run changes nothing.
func TestClusterImport(t *testing.T) {
	t.Parallel()
	srv := etcdtest.Start(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "cluster.key")
	if err := os.WriteFile(keyFile, bytes.Repeat([]byte{7}, 32), 0o600); err != nil {
		t.Fatal(err)
	}
	confFile := filepath.Join(dir, "edgeway.conf")
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": fmt.Sprintf(
		"upstream u { server 127.0.0.1:1 }\nroute r { match Path(`/`); to u }\ncluster {\n  etcd %s\n  prefix /edgeway/import\n  name importer\n  key_file %s\n}\n",
		srv.Endpoints()[0], keyFile)})
	store, err := acme.NewDir(filepath.Join(dir, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	files := map[string]string{
		"ca/account.key":      "-----BEGIN EC PRIVATE KEY-----\nacct\n-----END EC PRIVATE KEY-----\n",
		"ca/account.json":     `{"uri":"https://ca/acct/1"}`,
		"ca/certs/a.test.key": "-----BEGIN PRIVATE KEY-----\nleaf\n-----END PRIVATE KEY-----\n",
		"ca/certs/a.test.crt": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
		"ca/orders/a.test":    `{"order_url":"https://ca/order/1","stage":"created"}`,
	}
	for k, v := range files {
		if err := store.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	run := func() string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := dispatch([]string{"cluster", "import", "-c", confFile, filepath.Join(dir, "acme")}, &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
		}
		return out.String()
	}
	if got := run(); !strings.Contains(got, "imported 4, unchanged 0") {
		t.Fatalf("first import: %q, want 4 keys imported", got)
	}
	if got := run(); !strings.Contains(got, "imported 0, unchanged 4") {
		t.Fatalf("second import: %q, want nothing changed", got)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.Get(ctx, "/edgeway/import/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	acmeKeys := 0
	for _, kv := range res.Kvs {
		if strings.Contains(string(kv.Key), "/acme/") {
			acmeKeys++
		}
		if strings.Contains(string(kv.Key), "/orders/") {
			t.Errorf("an order journal was imported: %s", kv.Key)
		}
		if bytes.Contains(kv.Value, []byte("PRIVATE KEY")) || bytes.Contains(kv.Value, []byte("acme/acct")) {
			t.Errorf("%s holds a value in clear", kv.Key)
		}
	}
	if acmeKeys != 4 {
		t.Errorf("%d ACME keys in etcd, want 4", acmeKeys)
	}
}
