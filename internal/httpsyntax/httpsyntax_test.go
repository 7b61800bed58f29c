package httpsyntax

import (
	"reflect"
	"testing"

	"github.com/edgeway/edgeway/internal/httpmsg"
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

func TestListHas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		val  string
		tok  string
		want bool
	}{
		{"keep-alive, Upgrade", "upgrade", true},
		{"a, h2c ", "h2c", true},
		{"h2cx", "h2c", false},
		{"h2c", "h2c", true},
		{"websocket, foo,\tH2C ", "h2c", true},
		{"", "x", false},
	}
	for _, tc := range tests {
		if got := ListHas(tc.val, tc.tok); got != tc.want {
			t.Errorf("ListHas(%q, %q) = %v", tc.val, tc.tok, got)
		}
	}
}

func TestStripH2C(t *testing.T) {
	t.Parallel()
	h := httpmsg.Header{
		{Name: "Upgrade", Value: "h2c"},
		{Name: "HTTP2-Settings", Value: "AAMAAABkAAQAAP__"},
		{Name: "Connection", Value: "Upgrade, HTTP2-Settings, X-Keep"},
	}
	want := httpmsg.Header{{Name: "Connection", Value: "X-Keep"}}
	if got := StripH2C(h, false); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	ws := httpmsg.Header{{Name: "Upgrade", Value: "websocket"}, {Name: "Connection", Value: "Upgrade"}}
	if got := StripH2C(ws, false); len(got) != 2 {
		t.Errorf("a websocket offer was touched: %v", got)
	}
}
