package pvesim

import (
	"maps"
	"net/url"
)

func (s *Server) unlinkRoutes() []route {
	return []route{s.qemu.route("PUT /nodes/{node}/qemu/{vmid}/unlink", s.unlinkDisks)}
}

// unlinkDisks is qemu-server's unlink (src/PVE/API2/Qemu.pm): `idlist`
// becomes `delete` and the call is the synchronous config update, with
// its lock, checks and permissions; `force` frees the volumes instead of
// leaving them unusedN.
func (s *Server) unlinkDisks(k *guestKind, q *request) (any, error) {
	params := url.Values{}
	maps.Copy(params, q.params)
	params.Del("idlist")
	params.Set("delete", q.get("idlist"))
	upd := *q
	upd.params = params
	return s.putConfig(k, &upd)
}
