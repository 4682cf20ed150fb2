package schema

import (
	"encoding/json"
	"strconv"
)

// FormValue is a JSON value as PVE's form encoding carries it: a string as
// it is, a boolean as 1 or 0, a number in decimal without needless digits
// (2048, 0.5), null as "", anything else (an object, an array) as compact
// JSON. The planner compares defaults and options with it; the simulator
// and the conformance recorder read JSON request bodies with it.
func FormValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case int:
		return strconv.Itoa(x)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}
