package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeway/edgeway/internal/testutil"
)

// TestValidateEqualsRun: every start failure run finds in the files the
// configuration names is a validate failure too, with the same
// file:line:col of the directive naming the file; relative paths are
// taken from the main file's folder whatever the working directory.
func TestValidateEqualsRun(t *testing.T) {
	ca := testutil.NewCA(t, "preflight CA")
	const tlsListen = "listen websecure {\n  addr 127.0.0.1:0\n  protocols tls http1\n}\n"
	cases := []struct {
		desc, conf string
		files      map[string]string
		setup      func(dir string)
		directive  string // the line the error points at contains it
		want       string
	}{
		{desc: "missing certificate", conf: tlsListen + "tls {\n  cert certs/missing.pem certs/missing.key\n}\n",
			directive: "cert certs/missing.pem", want: "no such file"},
		{desc: "key of another certificate", conf: tlsListen + "tls {\n  cert a.pem b.key\n}\n",
			setup: func(dir string) {
				a, _ := ca.IssueFiles(t, dir, testutil.IssueOptions{}, "a.test")
				_, b := ca.IssueFiles(t, t.TempDir(), testutil.IssueOptions{}, "b.test")
				os.Rename(a, filepath.Join(dir, "a.pem"))
				data, _ := os.ReadFile(b)
				os.WriteFile(filepath.Join(dir, "b.key"), data, 0o600)
			},
			directive: "cert a.pem b.key", want: "key"},
		{desc: "missing client_ca", conf: "listen websecure {\n  addr 127.0.0.1:0\n  protocols tls http1\n  tls {\n    client_ca clients.pem\n  }\n}\ntls {\n  self_signed localhost\n}\n",
			directive: "client_ca clients.pem", want: "no such file"},
		{desc: "missing token_file", conf: "admin {\n  listen 127.0.0.1:0\n  token_file admin.token\n}\n",
			directive: "token_file admin.token", want: "no such file"},
		{desc: "token_file readable by others", conf: "admin {\n  listen 127.0.0.1:0\n  token_file admin.token\n}\n",
			files: map[string]string{"admin.token": "secret\n"}, setup: func(dir string) { os.Chmod(filepath.Join(dir, "admin.token"), 0o644) },
			directive: "token_file admin.token", want: "chmod 600"},
		{desc: "state_dir is a file", conf: "admin {\n  listen 127.0.0.1:0\n  token_file admin.token\n  state_dir state\n}\n",
			files: map[string]string{"state": "not a folder"}, setup: func(dir string) {
				os.WriteFile(filepath.Join(dir, "admin.token"), []byte("secret\n"), 0o600)
			},
			directive: "state_dir state", want: "not a folder"},
		{desc: "ACME storage under a file", conf: tlsListen + "tls {\n  acme {\n    directory https://127.0.0.1:1/dir\n    email ops@example.test\n    accept_terms on\n    storage notadir/acme\n    names a.example.test\n  }\n}\n",
			files: map[string]string{"notadir": "a file"}, directive: "storage notadir/acme", want: "not a directory"},
		{desc: "log folder missing", conf: "log {\n  output logs/edgeway.log\n}\n",
			directive: "output logs/edgeway.log", want: "does not exist"},
		{desc: "tracing otlp not OTLP/HTTP", conf: "tracing {\n  otlp grpc://127.0.0.1:4317\n  sample 1%\n}\n",
			directive: "otlp grpc://", want: "must start with http:// or https://"},
		{desc: "access log folder missing", conf: "log {\n  access_output /nonexistent-edgeway/access.log\n}\n",
			directive: "access_output", want: "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.desc, func(t *testing.T) {
			dir := t.TempDir()
			conf := "listen web { addr 127.0.0.1:0 }\nroute r {\n  match PathPrefix(`/`)\n  respond 200 \"ok\"\n}\n" + c.conf
			files := map[string]string{"edgeway.conf": conf}
			for k, v := range c.files {
				files[k] = v
			}
			testutil.WriteFiles(t, dir, files)
			if c.setup != nil {
				c.setup(dir)
			}
			line := 1 + strings.Count(conf[:strings.Index(conf, c.directive)], "\n")
			at := fmt.Sprintf("edgeway.conf:%d:", line)
			main := filepath.Join(dir, "edgeway.conf")
			out, code := runCLI(t, "validate", "-c", main)
			if code != 1 || !strings.Contains(out, at) || !strings.Contains(out, c.want) {
				t.Errorf("validate: exit %d, want 1 with %q and %q:\n%s", code, at, c.want, out)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run := exec.CommandContext(ctx, testutil.Binary(t), "run", "-c", main)
			b, err := run.CombinedOutput()
			if code := run.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(b), at) || !strings.Contains(string(b), c.want) {
				t.Errorf("run: exit %d (%v), want 1 with %q and %q:\n%s", code, err, at, c.want, b)
			}
		})
	}
}

// TestPathsFromTheMainFilesFolder validates a configuration whose
// relative paths (token_file, state_dir, a log file, a certificate) sit
// beside its main file, from another working directory.
func TestPathsFromTheMainFilesFolder(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t, "paths CA")
	cert, key := ca.IssueFiles(t, dir, testutil.IssueOptions{}, "localhost")
	testutil.WriteFiles(t, dir, map[string]string{"edgeway.conf": fmt.Sprintf(
		"admin {\n  listen 127.0.0.1:0\n  token_file admin.token\n  state_dir state\n}\n"+
			"log {\n  output edgeway.log\n}\n"+
			"listen websecure {\n  addr 127.0.0.1:0\n  protocols tls http1\n}\n"+
			"tls {\n  cert %s %s\n}\n"+
			"route r {\n  match PathPrefix(`/`)\n  respond 200 \"ok\"\n}\n", filepath.Base(cert), filepath.Base(key))})
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	if out, code := runCLI(t, "validate", "-c", filepath.Join(dir, "edgeway.conf")); code != 0 {
		t.Fatalf("validate from another folder: exit %d:\n%s", code, out)
	}
}
