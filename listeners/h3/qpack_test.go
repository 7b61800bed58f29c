package h3

import (
	"reflect"
	"testing"
)

func TestQPACKRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc   string
		fields []Field
	}{
		{desc: "static entries", fields: []Field{{":method", "GET"}, {":path", "/"}, {":scheme", "https"}, {"accept", "*/*"}}},
		{desc: "static name, literal value", fields: []Field{{":authority", "example.com"}, {":path", "/a?b=c"}, {"user-agent", "test"}}},
		{desc: "literal names", fields: []Field{{"x-forwarded-proto", "https"}, {"x-long", string(make([]byte, 300))}}},
		{desc: "empty value", fields: []Field{{"x-empty", ""}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			b := appendFieldSection(nil, tc.fields)
			var got []Field
			if err := decodeFieldSection(b, 1<<20, func(f Field) error { got = append(got, f); return nil }); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.fields) {
				t.Errorf("got %q, want %q", got, tc.fields)
			}
		})
	}
}

// FuzzDecodeFieldSection: anything the decoder accepts stays within the
// limit and re-encodes to a section that decodes to the same fields.
func FuzzDecodeFieldSection(f *testing.F) {
	f.Add(appendFieldSection(nil, []Field{{":method", "GET"}, {"x-a", "b"}, {"user-agent", "curl"}}))
	f.Add([]byte{0, 0, 0xd1})
	f.Add([]byte{0, 0, 0x2f, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		const limit = 4096
		var got []Field
		size := 0
		err := decodeFieldSection(b, limit, func(f Field) error {
			got = append(got, f)
			size += len(f.Name) + len(f.Value) + 32
			return nil
		})
		if err != nil {
			return
		}
		if size > limit {
			t.Fatalf("accepted %d bytes of fields over the limit %d", size, limit)
		}
		var again []Field
		if err := decodeFieldSection(appendFieldSection(nil, got), limit, func(f Field) error { again = append(again, f); return nil }); err != nil {
			t.Fatalf("re-encoded section fails: %v", err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip changed %q to %q", got, again)
		}
	})
}
