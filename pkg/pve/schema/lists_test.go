package schema

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestJoinLists(t *testing.T) {
	m := mustMethod(t, "PUT", "/nodes/{node}/qemu/{vmid}/config")
	tests := []struct {
		name      string
		in, want  url.Values
		wantCheck bool // Check finds nothing after the join
	}{
		{"repeated -list joined", url.Values{"delete": {"net2", "net3"}}, url.Values{"delete": {"net2,net3"}}, true},
		{"single value kept", url.Values{"delete": {"net2,net3"}}, url.Values{"delete": {"net2,net3"}}, true},
		{"repeated plain string left for Check", url.Values{"name": {"a", "b"}}, url.Values{"name": {"a", "b"}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := url.Values{}
			for k, v := range tc.in {
				got[k] = append([]string(nil), v...)
			}
			m.JoinLists(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JoinLists (-want +got)\n%s", diff)
			}
			got.Set("node", "pve")
			got.Set("vmid", "100")
			if errs := m.Check(got, CheckOptions{}); (len(errs) == 0) != tc.wantCheck {
				t.Errorf("Check after JoinLists: got %v, want errors: %v", errs, !tc.wantCheck)
			}
		})
	}
}
