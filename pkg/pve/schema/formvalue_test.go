package schema

import (
	"encoding/json"
	"testing"
)

func TestFormValue(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want string
	}{
		{"virtio,bridge=vmbr0", "virtio,bridge=vmbr0"},
		{true, "1"}, {false, "0"},
		{float64(2048), "2048"}, {0.5, "0.5"}, {1e21, "1000000000000000000000"},
		{7, "7"}, {json.Number("12.50"), "12.50"},
		{nil, ""},
		{map[string]any{"a": 1.0}, `{"a":1}`}, {[]any{"x", 2.0}, `["x",2]`},
	} {
		if got := FormValue(tc.in); got != tc.want {
			t.Errorf("FormValue(%#v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
