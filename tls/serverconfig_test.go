package edgetls

import (
	"crypto/tls"
	"encoding/pem"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/conf"
)

func TestMutualTLS(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Load(&conf.TLSStore{SelfSigned: []string{"m.test"}}); err != nil {
		t.Fatal(err)
	}
	clientCA := newTestCA(t, "client CA")
	strangerCA := newTestCA(t, "stranger CA")
	caFile := filepath.Join(t.TempDir(), "clients.pem")
	writeFile(t, caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: clientCA.cert.Raw}))
	good := clientCA.issue(t, leafOpts{cn: "alice", client: true})
	stranger := strangerCA.issue(t, leafOpts{cn: "mallory", client: true})

	tests := []struct {
		desc     string
		auth     string
		cert     *tls.Certificate
		wantErr  string // "" for success
		wantPeer string // client CN the server saw
	}{
		{"require, no certificate", "require", nil, "certificate required", ""},
		{"require, good certificate", "require", good, "", "alice"},
		{"require, unknown CA", "require", stranger, "unknown certificate authority", ""},
		{"default is require", "", nil, "certificate required", ""},
		{"optional, no certificate", "optional", nil, "", ""},
		{"optional, good certificate", "optional", good, "", "alice"},
		{"optional, unknown CA", "optional", stranger, "unknown certificate authority", ""},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			srv := serverFor(t, s, &conf.ListenerTLS{ClientCA: caFile, ClientAuth: tt.auth})
			cfg := &tls.Config{ServerName: "m.test", InsecureSkipVerify: true}
			if tt.cert != nil {
				// Send the certificate even when the server's CA list
				// does not name its issuer.
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
					return tt.cert, nil
				}
			}
			_, err := handshake(t, srv.addr, cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("client error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v", err)
			}
			st := <-srv.states
			peer := ""
			if len(st.PeerCertificates) > 0 {
				peer = st.PeerCertificates[0].Subject.CommonName
			}
			if peer != tt.wantPeer {
				t.Errorf("server saw client %q, want %q", peer, tt.wantPeer)
			}
		})
	}
}

func TestServerConfigErrors(t *testing.T) {
	s, _ := newTestStore(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	writeFile(t, garbage, []byte("nothing here"))
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		desc string
		l    conf.ListenerTLS
		want string
	}{
		{"missing client CA", conf.ListenerTLS{ClientCA: missing}, "tls: client_ca " + missing + ": no such file"},
		{"garbage client CA", conf.ListenerTLS{ClientCA: garbage}, "tls: client_ca " + garbage + ": no PEM block found"},
		{"bad client_auth", conf.ListenerTLS{ClientCA: garbage, ClientAuth: "maybe"}, `client_auth: "maybe"`},
		{"client_auth without CA", conf.ListenerTLS{ClientAuth: "require"}, "needs client_ca"},
		{"bad min version", conf.ListenerTLS{MinVersion: 0x1234}, "min_version"},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			_, err := s.ServerConfig(&tt.l, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ServerConfig: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestServerConfigFields(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Load(&conf.TLSStore{SelfSigned: []string{"v.test"}, SessionTickets: true}); err != nil {
		t.Fatal(err)
	}
	l := &conf.ListenerTLS{
		CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
		Curves:       []uint16{uint16(tls.CurveP384)},
	}
	cfg, err := s.ServerConfig(l, []string{"h2", "http/1.1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("MinVersion = %x, want TLS 1.2 by default", cfg.MinVersion)
	}
	if !slices.Equal(cfg.CurvePreferences, []tls.CurveID{tls.CurveP384}) {
		t.Errorf("CurvePreferences = %v", cfg.CurvePreferences)
	}
	if cfg.SessionTicketsDisabled || cfg.WrapSession == nil {
		t.Error("session tickets should be on and sealed by the store")
	}
	srv := startServer(t, cfg)
	tests := []struct {
		desc   string
		client *tls.Config
		check  func(tls.ConnectionState) string
	}{
		{"ALPN h2", &tls.Config{NextProtos: []string{"h2"}}, func(cs tls.ConnectionState) string {
			if cs.NegotiatedProtocol != "h2" {
				return "negotiated " + cs.NegotiatedProtocol
			}
			return ""
		}},
		{"TLS 1.2 gets the configured suite", &tls.Config{MaxVersion: tls.VersionTLS12}, func(cs tls.ConnectionState) string {
			if cs.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
				return "suite " + tls.CipherSuiteName(cs.CipherSuite)
			}
			return ""
		}},
		{"curves limit the groups", &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP384}}, func(cs tls.ConnectionState) string {
			if cs.CurveID != tls.CurveP384 {
				return "curve " + cs.CurveID.String()
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.desc, func(t *testing.T) {
			c := tt.client
			c.ServerName, c.InsecureSkipVerify = "v.test", true
			cs, err := handshake(t, srv.addr, c)
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(cs); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestMinVersion13RefusesTLS12Client(t *testing.T) {
	s, _ := newTestStore(t)
	if err := s.Load(&conf.TLSStore{SelfSigned: []string{"v.test"}}); err != nil {
		t.Fatal(err)
	}
	srv := serverFor(t, s, &conf.ListenerTLS{MinVersion: tls.VersionTLS13})
	_, err := handshake(t, srv.addr, &tls.Config{ServerName: "v.test", InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
	if err == nil || !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.2-only client: %v, want a protocol version alert", err)
	}
	cs, err := handshake(t, srv.addr, &tls.Config{ServerName: "v.test", InsecureSkipVerify: true})
	if err != nil || cs.Version != tls.VersionTLS13 {
		t.Errorf("TLS 1.3 client: version %x, err %v", cs.Version, err)
	}
}
