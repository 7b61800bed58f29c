package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/edgeway/edgeway/acme"
	"github.com/edgeway/edgeway/cluster"
	"github.com/edgeway/edgeway/conf"
	"github.com/edgeway/edgeway/internal/etcdtest"
	"github.com/edgeway/edgeway/internal/testutil"
)

// clusterEtcdClient is a client of the TLS etcd srv as user (a client
// certificate with that CN), closed when the test ends.
func clusterEtcdClient(t *testing.T, srv *etcdtest.Server, user string) *clientv3.Client {
	t.Helper()
	cert, key := srv.ClientCert(t, user)
	c, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		TLS: &tls.Config{RootCAs: srv.CA.Pool, Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// clusterEnableAuth sets etcd up as the README tells operators to: a
// root user, a role `user` with read-write on prefix/ only, a user of the
// same name holding it (the CN of edgeway's client certificate), a user
// "norole" with no role, then `auth enable`.
func clusterEnableAuth(t *testing.T, root *clientv3.Client, user, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pw := func() string {
		var b [16]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	from := prefix + "/"
	steps := []struct {
		what string
		do   func() error
	}{
		{"user add root", func() error { _, err := root.UserAdd(ctx, "root", pw()); return err }},
		{"grant root", func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err }},
		{"role add", func() error { _, err := root.RoleAdd(ctx, user); return err }},
		{"role grant-permission --prefix", func() error {
			_, err := root.RoleGrantPermission(ctx, user, from, clientv3.GetPrefixRangeEnd(from), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		}},
		{"user add", func() error { _, err := root.UserAdd(ctx, user, pw()); return err }},
		{"user grant-role", func() error { _, err := root.UserGrantRole(ctx, user, user); return err }},
		{"user add norole", func() error { _, err := root.UserAdd(ctx, "norole", pw()); return err }},
		{"auth enable", func() error { _, err := root.AuthEnable(ctx); return err }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("etcd %s: %v", s.what, err)
		}
	}
}

// TestClusterSecurity: three instances on an etcd with TLS, client
// certificates and authentication, edgeway's user limited to its prefix.
// An ACME folder imported over that connection and the ticket keys are
// sealed (no value under the prefix holds a private key or a ticket key
// in clear); the instances form the cluster, share overrides and resume
// each other's tickets; the user cannot write outside its prefix; and a
// certificate whose user has no role fails the start with a clear error.
func TestClusterSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and three edgeway processes")
	}
	srv := etcdtest.StartWith(t, etcdtest.Options{TLS: true})
	const prefix = "/edgeway/e2e"
	clusterEnableAuth(t, clusterEtcdClient(t, srv, "root"), "edgeway", prefix)
	cert, key := srv.ClientCert(t, "edgeway")
	ctls := &conf.ClusterTLS{CA: srv.CAFile, Cert: cert, Key: key}
	block := fmt.Sprintf("  tls {\n    ca %q\n    cert %q\n    key %q\n  }\n", ctls.CA, ctls.Cert, ctls.Key)

	c, srvAddr := startClusterTrioWith(t, clusterTrioOptions{etcd: srv, main: clusterTLSMain, block: block})
	clusterImportOverTLS(t, c, block)
	a, b := c.inst[0], c.inst[1]
	testutil.Eventually(t, 30*time.Second, func() bool {
		v := b.clusterInfo(t)
		return v.Connected && v.LiveMembers == 3
	}, "e2 lists three connected members over TLS with its role")
	if code, body := a.patch(t, "/api/upstreams/u/servers/"+srvAddr, `{"weight": 9}`); code != 200 {
		t.Fatalf("PATCH over a TLS etcd: %d %s", code, body)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return b.clusterServer(t, srvAddr).weight() == 9 }, "the override reached e2")
	addrs := c.clusterTLSAddrs(t)
	testutil.Eventually(t, 30*time.Second, func() bool {
		cache := &clusterOneTicket{}
		clusterTLSGet(t, addrs[0], tls.VersionTLS13, cache)
		return cache.has() && clusterTLSGet(t, addrs[1], tls.VersionTLS13, cache) && clusterTLSGet(t, addrs[2], tls.VersionTLS13, cache)
	}, "a ticket from e1 resumes on e2 and e3")

	n, _ := c.clusterTicketNode(t, conf.Cluster{TLS: ctls})
	clusterCheckSealed(t, n, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.Client().Put(ctx, "/other/x", "y"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("edgeway's user wrote outside its prefix: %v, want permission denied", err)
	}
	ncert, nkey := srv.ClientCert(t, "norole")
	_, err := cluster.Start(ctx, conf.Cluster{Etcd: srv.Endpoints(), Prefix: prefix, Name: "norole", KeyFile: c.key,
		LeaseTTL: 5 * time.Second, TLS: &conf.ClusterTLS{CA: srv.CAFile, Cert: ncert, Key: nkey}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "etcd refused edgeway's user") {
		t.Errorf("start with a user that has no role: %v, want the refusal naming the role", err)
	}
}

// clusterImportOverTLS runs `edgeway cluster import` of an ACME folder
// holding an account key and a certificate key, into the trio's cluster
// through the TLS block.
func clusterImportOverTLS(t *testing.T, c *clusterTrio, tlsBlock string) {
	t.Helper()
	dir := t.TempDir()
	store, err := acme.NewDir(filepath.Join(dir, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"ca/account.key":      "-----BEGIN EC PRIVATE KEY-----\nacct\n-----END EC PRIVATE KEY-----\n",
		"ca/certs/a.test.key": "-----BEGIN PRIVATE KEY-----\nleaf\n-----END PRIVATE KEY-----\n",
		"ca/certs/a.test.crt": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
	} {
		if err := store.Put(context.Background(), k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": fmt.Sprintf(
		"upstream u { server 127.0.0.1:1 }\nroute r { match Path(`/`); to u }\ncluster {\n  etcd %s\n  prefix /edgeway/e2e\n  name importer\n  key_file %s\n%s}\n",
		c.etcd.Endpoints()[0], c.key, tlsBlock)})
	var out, errOut bytes.Buffer
	if code := dispatch([]string{"cluster", "import", "-c", filepath.Join(dir, "edgeway.conf"), filepath.Join(dir, "acme")}, &out, &errOut); code != 0 {
		t.Fatalf("cluster import over TLS: exit %d: %s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "imported 3") {
		t.Fatalf("cluster import over TLS: %q, want 3 keys imported", out.String())
	}
}
