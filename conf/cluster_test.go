package conf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// baseCluster is a minimal main file the cluster tests add a block to.
const baseCluster = "upstream u { server a:1 }\nroute r { match Path(`/`); to u }\ncluster {\n  %s\n}\n"

func TestClusterBlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc  string
		body  string
		check func(*Cluster) bool
		err   string // "line:col: message prefix"
	}{
		{desc: "defaults", body: "etcd http://127.0.0.1:2379; key_file k; name e1", check: func(c *Cluster) bool {
			return c.Prefix == "/edgeway" && c.LeaseTTL == 10*time.Second && c.Name == "e1" && c.TLS == nil &&
				filepath.Base(c.KeyFile) == "k" && strings.Join(c.Etcd, ",") == "http://127.0.0.1:2379"
		}},
		{desc: "every setting", body: "etcd https://10.0.0.1:2379 https://etcd.example:2379\n  prefix /edgeway/prod; name edge-1; key_file /etc/k; lease_ttl 30s\n  tls { ca ca.pem; cert c.pem; key c.key }", check: func(c *Cluster) bool {
			return c.Prefix == "/edgeway/prod" && c.LeaseTTL == 30*time.Second && c.Name == "edge-1" && c.KeyFile == "/etc/k" &&
				len(c.Etcd) == 2 && c.TLS != nil && filepath.Base(c.TLS.CA) == "ca.pem" && filepath.Base(c.TLS.Key) == "c.key"
		}},
		{desc: "name defaults to the host name", body: "etcd http://[::1]:2379; key_file k", check: func(c *Cluster) bool { return c.Name != "" }},
		{desc: "plaintext off loopback", body: "etcd http://10.0.0.1:2379; key_file k", err: "4:8: etcd: http://10.0.0.1:2379 is plaintext to a host that is not loopback"},
		{desc: "mixed schemes", body: "etcd https://127.0.0.1:1 http://127.0.0.1:2; key_file k", err: "4:28: etcd: http://127.0.0.1:2 mixes"},
		{desc: "no port", body: "etcd https://10.0.0.1; key_file k", err: "4:8: etcd: URL \"https://10.0.0.1\": expected scheme://host:port"},
		{desc: "a path", body: "etcd https://10.0.0.1:1/x; key_file k", err: "expected scheme://host:port (no user, path or query)"},
		{desc: "bad scheme", body: "etcd unix:///run/etcd; key_file k", err: "4:8: etcd: URL \"unix:///run/etcd\" must start with https://"},
		{desc: "no etcd", body: "key_file k", err: "3:1: cluster block has no etcd"},
		{desc: "no key_file", body: "etcd https://10.0.0.1:2379", err: "3:1: cluster block has no key_file"},
		{desc: "lease too short", body: "etcd https://a:1; key_file k; lease_ttl 2s", err: "4:43: lease_ttl: 2s is out of range (expected whole seconds from 5s to 5m0s)"},
		{desc: "lease fraction", body: "etcd https://a:1; key_file k; lease_ttl 5500ms", err: "lease_ttl: 5500ms is out of range"},
		{desc: "lease too long", body: "etcd https://a:1; key_file k; lease_ttl 1h", err: "lease_ttl: 1h is out of range"},
		{desc: "bad prefix", body: "etcd https://a:1; key_file k; prefix edgeway/", err: "4:40: prefix: invalid prefix \"edgeway/\""},
		{desc: "bad name", body: "etcd https://a:1; key_file k; name \"a b\"", err: "4:38: name: invalid name \"a b\""},
		{desc: "cert without key", body: "etcd https://a:1; key_file k; tls { cert c.pem }", err: "cluster tls: cert and key go together"},
		{desc: "tls with http", body: "etcd http://127.0.0.1:1; key_file k; tls { ca c.pem }", err: "cluster tls: the etcd endpoints are http://"},
		{desc: "unknown directive", body: "etcd https://a:1; key_file k; token x", err: "4:33: unknown directive \"token\" in cluster block"},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			cfg, err := loadString(t, strings.Replace(baseCluster, "%s", tc.body, 1))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Cluster == nil || !tc.check(cfg.Cluster) {
				t.Fatalf("cluster = %+v", cfg.Cluster)
			}
		})
	}
}

func TestNoClusterBlock(t *testing.T) {
	t.Parallel()
	cfg, err := loadString(t, "upstream u { server a:1 }\nroute r { match Path(`/`); to u }\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != nil {
		t.Fatalf("Cluster = %+v without a cluster block, want nil", cfg.Cluster)
	}
}

// An acme block's storage beside a cluster block is not read: a warning
// at its line says so (and where the state lives instead).
func TestClusterWarnsUnusedACMEStorage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := "tls {\n  self_signed a.test\n  acme {\n    accept_terms on\n    storage " + dir + "\n  }\n}\n" +
		"upstream u { server a:1 }\nroute r { match Path(`/`); to u }\ncluster {\n  etcd http://127.0.0.1:2379; key_file k; name e1\n}\n"
	main := filepath.Join(dir, "main.conf")
	if err := os.WriteFile(main, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(main)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings {
		if strings.Contains(w.String(), "storage") {
			got = append(got, w.String())
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "main.conf:5:5: storage: not used beside a cluster block") {
		t.Fatalf("storage warnings = %q, want one at main.conf:5:5", got)
	}
}
