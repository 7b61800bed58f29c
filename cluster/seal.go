package cluster

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
)

// KeySize is the length of the sealing key in key_file.
const KeySize = 32

// sealMagic opens every sealed value: format version 1, AES-256-GCM.
const sealMagic = "EWS1"

// keyIDSize is the length of the key id in a sealed value: the first
// bytes of SHA-256 of the key, so that a value sealed with another key
// is told apart from a damaged one.
const keyIDSize = 8

// ErrKeyMismatch is returned by Open for a value sealed with another key.
var ErrKeyMismatch = errors.New("sealed with another cluster key (key_file differs between instances)")

// ErrInsecureKeyFile is returned by ReadKeyFile for a file group or
// others may read or write.
var ErrInsecureKeyFile = errors.New("key file is accessible by group or others")

// sealer seals and opens values with one key (AES-256-GCM, a random
// 96-bit nonce per value). The envelope is
// "EWS1" | key id (8 bytes) | nonce (12 bytes) | ciphertext and tag.
type sealer struct {
	aead cipher.AEAD
	id   [keyIDSize]byte
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("cluster key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	s := &sealer{aead: aead}
	sum := sha256.Sum256(key)
	copy(s.id[:], sum[:])
	return s, nil
}

func (s *sealer) seal(plain []byte) ([]byte, error) {
	head := len(sealMagic) + keyIDSize
	out := make([]byte, head+s.aead.NonceSize(), head+s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	copy(out, sealMagic)
	copy(out[len(sealMagic):], s.id[:])
	nonce := out[head:]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	return s.aead.Seal(out, nonce, plain, out[:head]), nil
}

func (s *sealer) open(sealed []byte) ([]byte, error) {
	head := len(sealMagic) + keyIDSize
	if len(sealed) < head+s.aead.NonceSize()+s.aead.Overhead() || string(sealed[:len(sealMagic)]) != sealMagic {
		return nil, errors.New("open: not a sealed value")
	}
	if !bytes.Equal(sealed[len(sealMagic):head], s.id[:]) {
		return nil, fmt.Errorf("open: %w", ErrKeyMismatch)
	}
	nonce := sealed[head : head+s.aead.NonceSize()]
	plain, err := s.aead.Open(nil, nonce, sealed[head+s.aead.NonceSize():], sealed[:head])
	if err != nil {
		return nil, fmt.Errorf("open: damaged sealed value: %w", err)
	}
	return plain, nil
}

// ReadKeyFile reads the cluster key: a regular file, not accessible by
// group or others, holding 32 raw bytes, 64 hex digits or the standard
// base64 of 32 bytes (a trailing newline is ignored for the text forms).
func ReadKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cluster key_file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("cluster key_file %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("cluster key_file %s (mode %04o): %w; chmod 600 %s", path, perm, ErrInsecureKeyFile, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cluster key_file: %w", err)
	}
	key, err := parseKey(b)
	if err != nil {
		return nil, fmt.Errorf("cluster key_file %s: %w", path, err)
	}
	return key, nil
}

func parseKey(b []byte) ([]byte, error) {
	if len(b) == KeySize {
		return b, nil
	}
	t := bytes.TrimRight(b, "\r\n")
	if len(t) == 2*KeySize {
		if k, err := hex.DecodeString(string(t)); err == nil {
			return k, nil
		}
	}
	if k, err := base64.StdEncoding.DecodeString(string(t)); err == nil && len(k) == KeySize {
		return k, nil
	}
	return nil, fmt.Errorf("holds %d bytes; want %d random bytes (or 64 hex digits, or their base64): "+
		"head -c 32 /dev/urandom > FILE", len(b), KeySize)
}
