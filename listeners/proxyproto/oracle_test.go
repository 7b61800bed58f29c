package proxyproto

import (
	"bufio"
	"bytes"
	"testing"

	pp "github.com/pires/go-proxyproto"
	"github.com/pires/go-proxyproto/tlvparse"
)

// theirs parses exactly b with go-proxyproto.
func theirs(b []byte) (*pp.Header, error) {
	return pp.Read(bufio.NewReaderSize(bytes.NewReader(b), len(b)+16))
}

// theirSSL returns what go-proxyproto's tlvparse makes of the SSL TLV in
// header in.
func theirSSL(t *testing.T, in []byte) (tlvparse.PP2SSL, bool) {
	t.Helper()
	h, err := theirs(in)
	if err != nil {
		t.Fatalf("go-proxyproto: %v", err)
	}
	tlvs, err := h.TLVs()
	if err != nil {
		t.Fatalf("go-proxyproto TLVs: %v", err)
	}
	return tlvparse.FindSSL(tlvs)
}
