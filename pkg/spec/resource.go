package spec

// Node is the PVE node the resource lives on ("" when the spec leaves it to
// the connection's default node).
func (r *Resource) Node() string { return r.Params.Get("node") }

// CreateCall returns the PVE method and path template whose parameters a
// kind's spec passes through (ok is false for Connection and Defaults).
func CreateCall(kind string) (method, path string, ok bool) {
	k := kindOf(kind)
	if k == nil || k.Create == nil {
		return "", "", false
	}
	return k.Create.Method, k.Create.Path, true
}
