package httpsyntax

import (
	"net/http"
	"reflect"
	"testing"
)

func TestValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc         string
		in           string
		token, value bool
	}{
		{desc: "name", in: "X-Forwarded-For", token: true, value: true},
		{desc: "empty", in: "", token: false, value: true},
		{desc: "space", in: "a b", token: false, value: true},
		{desc: "separator", in: "a:b", token: false, value: true},
		{desc: "tab", in: "a\tb", token: false, value: true},
		{desc: "crlf", in: "a\r\nb", token: false, value: false},
		{desc: "nul", in: "a\x00", token: false, value: false},
		{desc: "del", in: "a\x7f", token: false, value: false},
		{desc: "non-ascii", in: "é", token: false, value: true},
	}
	for _, tc := range tests {
		if got := ValidToken(tc.in); got != tc.token {
			t.Errorf("%s: ValidToken(%q) = %v", tc.desc, tc.in, got)
		}
		if got := ValidFieldValue(tc.in); got != tc.value {
			t.Errorf("%s: ValidFieldValue(%q) = %v", tc.desc, tc.in, got)
		}
	}
}

func TestHasToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		vals []string
		tok  string
		want bool
	}{
		{[]string{"keep-alive, Upgrade"}, "upgrade", true},
		{[]string{"a", " h2c "}, "h2c", true},
		{[]string{"h2cx"}, "h2c", false},
		{[]string{"h2c"}, "h2c", true},
		{[]string{"websocket", " foo, H2C "}, "h2c", true},
		{nil, "x", false},
	}
	for _, tc := range tests {
		if got := HasToken(tc.vals, tc.tok); got != tc.want {
			t.Errorf("HasToken(%q, %q) = %v", tc.vals, tc.tok, got)
		}
	}
}

func TestStripH2CUpgrade(t *testing.T) {
	t.Parallel()
	h := http.Header{
		"Upgrade":        {"h2c"},
		"Http2-Settings": {"AAMAAABkAAQAAP__"},
		"Connection":     {"Upgrade, HTTP2-Settings, X-Keep"},
	}
	if !StripH2CUpgrade(h) {
		t.Fatal("no h2c offer seen")
	}
	want := http.Header{"Connection": {"X-Keep"}}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("got %v, want %v", h, want)
	}
	ws := http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}
	if StripH2CUpgrade(ws) || len(ws) != 2 {
		t.Errorf("a websocket offer was touched: %v", ws)
	}
}
