package router

import "testing"

func TestXFCCValues(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"client.test":         "client.test",
		"spiffe://a/b":        "spiffe://a/b",
		"a,b;c=d":             `"a,b;c=d"`,
		`CN="x",O=a\b` + "\n": `"CN=\"x\",O=a\\b"`,
	} {
		if got := string(appendValue(nil, in)); got != want {
			t.Errorf("appendValue(%q) = %s, want %s", in, got, want)
		}
	}
}
