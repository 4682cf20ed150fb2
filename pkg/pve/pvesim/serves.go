package pvesim

import "github.com/pvectl/pvectl/pkg/pve/schema"

// Serves reports whether the simulator handles key, "METHOD /path/{var}"
// as PVE's apidoc spells it: the kind contract test asks it for the calls
// each kind makes, so a kind cannot ship without its simulator routes.
func (s *Server) Serves(key string) bool {
	m, ok := schema.Default().Methods[key]
	if !ok {
		return false
	}
	_, ok = s.routes[m]
	return ok
}
