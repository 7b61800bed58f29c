package edgetls

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// FileError is a problem with one certificate or key file. Its message
// names the file ("tls: cert /x/a.pem: key does not match certificate").
type FileError struct {
	Kind string // "cert", "key" or "client_ca"
	File string
	Err  error
}

func (e *FileError) Error() string { return "tls: " + e.Kind + " " + e.File + ": " + e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// Problems a certificate or key file can have, for errors.Is.
var (
	ErrKeyMismatch    = errors.New("key does not match certificate")
	ErrNoPEM          = errors.New("no PEM block found")
	ErrUnsupportedKey = errors.New("unsupported private key type (want RSA, ECDSA or Ed25519)")
)

// readFile reads a file; a failure to read is reported without repeating
// the path, which the FileError carries already.
func readFile(kind, name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return nil, &FileError{Kind: kind, File: name, Err: err}
	}
	return b, nil
}

// loadPair reads a PEM certificate chain (leaf first) and its PEM private
// key and checks that they belong together.
func loadPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := readFile("cert", certFile)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readFile("key", keyFile)
	if err != nil {
		return nil, err
	}
	return parsePair(certFile, keyFile, certPEM, keyPEM)
}

// parsePair is loadPair after the reading; the names are for messages.
func parsePair(certFile, keyFile string, certPEM, keyPEM []byte) (*tls.Certificate, error) {
	ders, leaf, err := parseChain(certPEM)
	if err != nil {
		return nil, &FileError{Kind: "cert", File: certFile, Err: err}
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, &FileError{Kind: "key", File: keyFile, Err: err}
	}
	if !keyMatches(leaf, key) {
		return nil, &FileError{Kind: "cert", File: certFile,
			Err: fmt.Errorf("%w (key file %s)", ErrKeyMismatch, keyFile)}
	}
	return &tls.Certificate{Certificate: ders, PrivateKey: key, Leaf: leaf}, nil
}

// parseChain returns the DER certificates of a PEM chain and the parsed
// leaf. Blocks of other types (a key bundled in the file) are skipped, as
// tls.X509KeyPair does.
func parseChain(data []byte) ([][]byte, *x509.Certificate, error) {
	var ders [][]byte
	var leaf *x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate %d in the chain: %w", len(ders)+1, err)
		}
		if leaf == nil {
			leaf = c
		}
		ders = append(ders, block.Bytes)
	}
	if len(ders) == 0 {
		return nil, nil, fmt.Errorf("%w: want a CERTIFICATE block", ErrNoPEM)
	}
	return ders, leaf, nil
}

// parseKey returns the first private key of a PEM file: PKCS#8, PKCS#1
// (RSA) or SEC 1 (EC).
func parseKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%w: want a PRIVATE KEY block", ErrNoPEM)
		}
		switch {
		case block.Type == "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("encrypted private keys are not supported")
		case block.Type == "PRIVATE KEY" || strings.HasSuffix(block.Type, " PRIVATE KEY"):
			return parseKeyDER(block.Bytes)
		}
	}
}

func parseKeyDER(der []byte) (crypto.Signer, error) {
	var key any
	var err error
	if key, err = x509.ParsePKCS8PrivateKey(der); err != nil {
		if k, err1 := x509.ParsePKCS1PrivateKey(der); err1 == nil {
			key, err = k, nil
		} else if k, err2 := x509.ParseECPrivateKey(der); err2 == nil {
			key, err = k, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("parsing private key: %w", err)
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		return k, nil
	case ed25519.PrivateKey:
		return k, nil
	}
	return nil, fmt.Errorf("%w: %T", ErrUnsupportedKey, key)
}

// keyMatches reports whether key is the private half of leaf's public key.
func keyMatches(leaf *x509.Certificate, key crypto.PrivateKey) bool {
	signer, ok := key.(crypto.Signer)
	if !ok {
		return false
	}
	pub, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(leaf.PublicKey)
}

// parseChainDER parses a DER chain (tls.Certificate.Certificate) and
// returns the leaf.
func parseChainDER(ders [][]byte) ([]*x509.Certificate, *x509.Certificate, error) {
	certs := make([]*x509.Certificate, 0, len(ders))
	for i, der := range ders {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return nil, nil, fmt.Errorf("certificate %d in the chain: %w", i+1, err)
		}
		certs = append(certs, c)
	}
	return certs, certs[0], nil
}
