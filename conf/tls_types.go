package conf

import (
	"net/netip"
	"time"
)

// TLSStore is the top-level `tls { ... }` block: the certificates every TLS
// listener serves from (package tls, imported as edgetls, keeps them) and
// the store-wide settings. Nil when the main file has no tls block.
type TLSStore struct {
	// Certificates are the `cert CERTFILE KEYFILE [default]` lines, in
	// order; at most one is Default, and a CertFile appears once. A name
	// may have an RSA and an ECDSA certificate; the client's capabilities
	// choose. The one marked default (else the first) answers a
	// ClientHello without SNI or with a name no certificate covers.
	Certificates []Certificate
	// SelfSigned lists names (`self_signed NAME...`) for which a
	// self-signed ECDSA certificate is generated in memory at start (the
	// demo configuration; never for production): host names, wildcards
	// of one label ("*.example.test") and IP addresses, in lower case.
	// Default none.
	SelfSigned []string
	// OCSPStapling fetches, caches and staples OCSP responses for
	// certificates that name a responder (`ocsp_stapling on|off`).
	// Default true.
	OCSPStapling bool
	// SessionTickets turns TLS session resumption by tickets on
	// (`session_tickets on|off`). Default true.
	SessionTickets bool
	// TicketRotation is how often a new session ticket key is made
	// (`ticket_rotation 12h`); tickets made with the previous two keys are
	// still accepted. Default 12h; at least 1m.
	TicketRotation time.Duration
	// ACME orders and renews certificates from an ACME CA (`acme { ...
	// }`); nil without an acme block.
	ACME *ACME
	Pos  Pos
}

// Certificate is one `cert CERTFILE KEYFILE [default]` line: a PEM chain
// (leaf first) and its PEM private key (RSA, ECDSA or Ed25519). Relative
// paths are taken from the main file's directory, so Load gives absolute
// ones. conf does not read the files: the tls store does, at every load
// and reload, so that a missing or bad file is reported by either.
type Certificate struct {
	CertFile, KeyFile string
	Default           bool
	Pos               Pos
}

// ListenerTLS is a listener's `tls { ... }` block. A listener is a TLS
// listener when its protocols include "tls"; then TLS is never nil after
// Load (defaults filled in).
type ListenerTLS struct {
	// MinVersion is the lowest TLS version accepted (`min_version 1.2|1.3`),
	// a crypto/tls Version constant. Default TLS 1.2.
	MinVersion uint16
	// CipherSuites are the TLS 1.2 suites offered (`ciphers NAME...`,
	// crypto/tls names such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256),
	// in order; the suites of tls.InsecureCipherSuites are refused, and
	// TLS 1.3 suites are not configurable. Default nil: crypto/tls's
	// secure default list.
	CipherSuites []uint16
	// Curves are the key exchange groups (`curves X25519MLKEM768 X25519
	// P-256 P-384 P-521`; secp256r1, secp384r1 and secp521r1 are also
	// accepted), crypto/tls CurveID values in preference order. Default
	// nil: crypto/tls's default.
	Curves []uint16
	// ClientCA is a PEM file of CAs that sign client certificates
	// (`client_ca FILE`): mutual TLS. A relative path is taken from the
	// main file's directory. Default "": no client certificate asked for.
	ClientCA string
	// ClientAuth is "require" (a client without a valid certificate fails
	// the handshake) or "optional" (a certificate, when sent, must be
	// valid) (`client_auth`). Default "require" when ClientCA is set; ""
	// exactly when ClientCA is "".
	ClientAuth string
	// HandshakeTimeout bounds the time from the first byte of the
	// ClientHello to the end of the handshake (`handshake_timeout`).
	// Default 10s.
	HandshakeTimeout time.Duration
	// Certificates, when the block has `cert` or `self_signed` lines of
	// its own, are the only certificates the listener serves: a store of
	// its own, with the default OCSP and session ticket settings and its
	// own ticket keys; the top-level block's certificates and ACME names
	// are not served there. Nil: the top-level tls block's.
	Certificates *TLSStore
	Pos          Pos
}

// ProxyProtocol is a listener's `proxy_protocol trusted CIDR...` line:
// connections from these peers must start with a PROXY protocol v1 or v2
// header, whose source address then stands for the client everywhere
// (ClientIP rules, X-Forwarded-For, logs); connections from any other peer
// are closed and logged. The header must arrive within the listener's
// read_header_timeout.
type ProxyProtocol struct {
	// Trusted holds the peers that must send the header, masked CIDRs
	// (a single address is a /32 or /128); never empty.
	Trusted []netip.Prefix
	Pos     Pos
}

// H2Limits are the HTTP/2 limits of a listener that serves h2 or h2c
// (`h2 { ... }`); DefaultH2Limits has the defaults.
type H2Limits struct {
	// MaxConcurrentStreams caps the streams a client may have open at
	// once (`max_concurrent_streams`). Default 250; 1 to 10000.
	MaxConcurrentStreams int
	// MaxFrameSize is the largest frame payload the listener accepts
	// (`max_frame_size`), 16KiB to 16MiB-1. Default 16KiB.
	MaxFrameSize int
	// StreamStallTimeout resets a stream whose response or request body
	// makes no progress for this long (`stream_stall_timeout`): a client
	// that never opens its flow-control window cannot keep a stream, and
	// the upstream connection behind it, forever. Default 30s; at least
	// 1s.
	StreamStallTimeout time.Duration
}
