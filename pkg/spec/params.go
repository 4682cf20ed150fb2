package spec

import (
	"encoding/json"

	"github.com/pvectl/pvectl/internal/kvlist"
)

// Params are a resource's PVE parameters (Resource.Params): a small map
// from PVE's key to its wire value, kept as a list sorted by key.
//
// It is a kvlist.List (internal/kvlist: a list sorted by key, used as a
// pointer like the map it replaces, ~32 bytes a key where a Go map's
// smallest table is ~340; pve.Config is the other one), read from JSON
// by paramsJSON.
type Params = kvlist.List[paramsJSON]

// NewParams returns an empty set with room for n keys.
func NewParams(n int) *Params { return kvlist.New[paramsJSON](n) }

// ParamsOf returns a set holding m's keys and values (nil for a nil map).
func ParamsOf(m map[string]string) *Params { return kvlist.Of[paramsJSON](m) }

// paramsJSON reads a JSON object of strings (a saved plan's params).
type paramsJSON struct{}

// Decode reads the object's members in key order (nil for null).
func (paramsJSON) Decode(b []byte) ([]kvlist.Entry, error) {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return kvlist.Entries(m), nil
}
