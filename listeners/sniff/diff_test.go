package sniff

import (
	"crypto/tls"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// randomConfig returns client settings with a random server name, ALPN
// list, version range and key exchange preferences.
func randomConfig(r *rand.Rand) *tls.Config {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
	word := func(alphabet string, n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	cfg := &tls.Config{InsecureSkipVerify: true}
	if r.IntN(4) > 0 {
		labels := make([]string, 1+r.IntN(4))
		for i := range labels {
			labels[i] = word(letters[:62], 1+r.IntN(20))
		}
		cfg.ServerName = strings.Join(labels, ".")
	}
	for range r.IntN(5) {
		// Any printable ASCII but space: ALPN names are opaque bytes.
		alpn := "!\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"
		cfg.NextProtos = append(cfg.NextProtos, word(alpn, 1+r.IntN(30)))
	}
	versions := []uint16{tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13}
	lo := r.IntN(len(versions))
	cfg.MinVersion, cfg.MaxVersion = versions[lo], versions[lo+r.IntN(len(versions)-lo)]
	curves := []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521}
	r.Shuffle(len(curves), func(i, j int) { curves[i], curves[j] = curves[j], curves[i] })
	cfg.CurvePreferences = curves[:1+r.IntN(len(curves))]
	return cfg
}

// TestDifferential checks that Parse reads random crypto/tls hellos the
// way a crypto/tls server does.
func TestDifferential(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	runs := 300
	if testing.Short() {
		runs = 30
	}
	for i := range runs {
		cfg := randomConfig(r)
		raw := captureHello(t, cfg)
		info := serverView(t, raw)
		if info == nil {
			t.Fatalf("case %d (%+v): crypto/tls refused the hello", i, cfg)
		}
		h, n, err := Parse(raw)
		if err != nil || n != len(raw) {
			t.Fatalf("case %d: Parse = %d, %v; want %d, nil", i, n, err, len(raw))
		}
		want := Hello{
			SNI:     strings.ToLower(info.ServerName),
			ALPN:    info.SupportedProtos,
			Version: slices.Max(info.SupportedVersions),
		}
		if !reflect.DeepEqual(h, want) {
			t.Fatalf("case %d (server name %q, ALPN %q): Parse = %+v, crypto/tls saw %+v", i, cfg.ServerName, cfg.NextProtos, h, want)
		}
		if cfg.ServerName != "" && h.SNI != strings.ToLower(cfg.ServerName) {
			t.Fatalf("case %d: SNI %q, client sent %q", i, h.SNI, cfg.ServerName)
		}
	}
}
