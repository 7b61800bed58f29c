package edgetls

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"

	"github.com/edgeway/edgeway/conf"
)

// Client authentication modes of conf.ListenerTLS.ClientAuth.
const (
	ClientAuthRequire  = "require"
	ClientAuthOptional = "optional"
)

// ServerConfig returns the crypto/tls configuration of a listener: its
// certificates come from the store (GetCertificate), so loads and puts
// reach it without a rebuild. l may be nil (all defaults). alpn becomes
// NextProtos. Curves limit the key exchange groups; crypto/tls ignores
// their order since Go 1.24 and uses its own preference.
//
// Session tickets follow the store's settings at the time of the call:
// on, tickets are sealed with the store's rotating keys (see the package
// doc); off, SessionTicketsDisabled. A config stays valid after later
// loads, but a change of session_tickets needs a new one.
func (s *Store) ServerConfig(l *conf.ListenerTLS, alpn []string) (*tls.Config, error) {
	if l == nil {
		l = &conf.ListenerTLS{}
	}
	cfg := &tls.Config{
		MinVersion:     l.MinVersion,
		CipherSuites:   slices.Clone(l.CipherSuites),
		NextProtos:     slices.Clone(alpn),
		GetCertificate: s.handshakeCertificate,
	}
	switch l.MinVersion {
	case 0:
		cfg.MinVersion = tls.VersionTLS12
	case tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13:
	default:
		return nil, fmt.Errorf("tls: min_version: unknown version %#04x", l.MinVersion)
	}
	for _, c := range l.Curves {
		cfg.CurvePreferences = append(cfg.CurvePreferences, tls.CurveID(c))
	}
	if err := setClientAuth(cfg, l); err != nil {
		return nil, err
	}
	s.mu.Lock()
	tickets := s.settings.tickets
	s.mu.Unlock()
	if tickets {
		cfg.WrapSession = s.tickets.wrap
		cfg.UnwrapSession = s.tickets.unwrap
	} else {
		cfg.SessionTicketsDisabled = true
	}
	return cfg, nil
}

// setClientAuth asks for client certificates signed by the CAs of
// l.ClientCA.
func setClientAuth(cfg *tls.Config, l *conf.ListenerTLS) error {
	if l.ClientCA == "" {
		if l.ClientAuth != "" {
			return fmt.Errorf("tls: client_auth %s needs client_ca", l.ClientAuth)
		}
		return nil
	}
	switch l.ClientAuth {
	case "", ClientAuthRequire:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case ClientAuthOptional:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		return fmt.Errorf("tls: client_auth: %q is not require or optional", l.ClientAuth)
	}
	pemData, err := readFile("client_ca", l.ClientCA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return &FileError{Kind: "client_ca", File: l.ClientCA,
			Err: fmt.Errorf("%w: want CERTIFICATE blocks", ErrNoPEM)}
	}
	cfg.ClientCAs = pool
	return nil
}
