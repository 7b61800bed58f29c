package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgeway/edgeway/upstream"
)

// TestDecodeOverride holds a PATCH body's errors to naming the field,
// what it takes and what came, in the API's words rather than Go's.
func TestDecodeOverride(t *testing.T) {
	t.Parallel()
	tests := []struct {
		desc, body string
		want       string // the override read, as set/cleared fields
		err        string
	}{
		{desc: "drain", body: `{"drain": true}`, want: "drain=true"},
		{desc: "weight and clear", body: `{"weight": 20, "drain": null}`, want: "weight=20 drain=clear"},
		{desc: "disabled false", body: `{"disabled": false}`, want: "disabled=false"},
		{desc: "clear all", body: `{"weight": null, "drain": null, "disabled": null}`, want: "weight=clear drain=clear disabled=clear"},
		{desc: "empty object", body: `{}`, want: ""},
		{desc: "drain string", body: `{"drain": "yes"}`, err: `drain: expected true, false or null, got "yes"`},
		{desc: "disabled number", body: `{"disabled": 1}`, err: `disabled: expected true, false or null, got 1`},
		{desc: "weight fraction", body: `{"weight": 2.5}`, err: `weight: expected an integer 0 to 1048576 or null, got 2.5`},
		{desc: "weight too big", body: `{"weight": 2000000}`, err: `weight: expected an integer 0 to 1048576 or null, got 2000000`},
		{desc: "weight negative", body: `{"weight": -1}`, err: `weight: expected an integer 0 to 1048576 or null, got -1`},
		{desc: "weight string", body: `{"weight": "5"}`, err: `weight: expected an integer 0 to 1048576 or null, got "5"`},
		{desc: "weight object", body: `{"weight": { "n" : 5 }}`, err: `weight: expected an integer 0 to 1048576 or null, got {"n":5}`},
		{desc: "long value", body: `{"drain": "` + strings.Repeat("x", 60) + `"}`, err: `drain: expected true, false or null, got "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...`},
		{desc: "unknown field", body: `{"colour": "red"}`, err: `colour: unknown field (expected weight, drain or disabled)`},
		{desc: "first bad field in name order", body: `{"weight": "x", "drain": "y"}`, err: `drain: expected`},
		{desc: "array", body: `[true]`, err: `body: expected a JSON object such as {"drain": true}, got [true]`},
		{desc: "bare string", body: `"drain"`, err: `body: expected a JSON object such as {"drain": true}, got "drain"`},
		{desc: "null", body: `null`, err: `body: expected a JSON object such as {"drain": true}, got null`},
		{desc: "empty body", body: ``, err: `body: expected a JSON object such as {"drain": true}, got an empty body`},
		{desc: "not JSON", body: `drain=true`, err: `body: expected a JSON object such as {"drain": true}, got invalid JSON`},
	}
	for _, tc := range tests {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			o, err := decodeOverride(strings.NewReader(tc.body))
			switch {
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Fatalf("error %v, want one starting %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err == "" && overrideFields(o) != tc.want:
				t.Fatalf("read %q, want %q", overrideFields(o), tc.want)
			}
		})
	}
}

// overrideFields writes what o sets and clears, in field order.
func overrideFields(o upstream.Override) string {
	var f []string
	if o.Weight != nil {
		f = append(f, fmt.Sprintf("weight=%d", *o.Weight))
	}
	if o.ClearWeight {
		f = append(f, "weight=clear")
	}
	for _, b := range []struct {
		name  string
		v     *bool
		clear bool
	}{{"drain", o.Drain, o.ClearDrain}, {"disabled", o.Disabled, o.ClearDisabled}} {
		if b.v != nil {
			f = append(f, fmt.Sprintf("%s=%t", b.name, *b.v))
		}
		if b.clear {
			f = append(f, b.name+"=clear")
		}
	}
	return strings.Join(f, " ")
}
