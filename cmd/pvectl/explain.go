package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/runlock"
)

// explain turns a run-time error that users meet when they first point
// pvectl at a cluster into what happened (first) and one line of what to
// do. Errors it does not know are left as they are (todo "").
func explain(err error) (headline, todo string) {
	msg := err.Error()
	req := pve.FailedRequest(err)
	// where is the request and what led to it: "default connection: read
	// cluster resources: GET /cluster/resources".
	where := req
	if i := strings.Index(msg, req); req != "" && i > 0 {
		where = strings.TrimSuffix(msg[:i], ": ") + ": " + req
	}
	at := func(what string) string {
		if where == "" {
			return what
		}
		return what + " (" + where + ")"
	}
	var ae *pve.APIError
	var de *net.DNSError
	var oe *net.OpError
	var dl *pve.DeadlineError
	var le *runlock.LockedError
	switch {
	case errors.As(err, &le):
		return le.Error(), le.Hint()
	case errors.As(err, &ae) && ae.Status == 401:
		return at("PVE refused the API token: 401 " + ae.Message),
			"Check PROXMOX_TOKEN_ID (user@realm!tokenname) and PROXMOX_TOKEN_SECRET (or the Connection's tokenId and tokenSecret), and that the token exists on this cluster and has not expired (pveum user token list USER); with privilege separation the token needs ACLs of its own."
	case errors.As(err, &ae) && ae.Status == 403:
		return at("PVE denied the request: 403 " + ae.Message),
			"Grant the API token the permission on that path (pveum acl modify PATH --tokens 'USER@REALM!NAME' --roles ROLE); with privilege separation the token's own ACLs count, not its user's."
	case errors.As(err, &ae) && strings.Contains(ae.Message, "HTTP request to an HTTPS server"),
		strings.Contains(msg, `malformed HTTP response "\x15\x03`):
		return at("the server speaks HTTPS, but the URL says http://"),
			"Write https:// in PROXMOX_URL (or the Connection's url): PVE serves its API over HTTPS on port 8006."
	case strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		return at("the server speaks plain HTTP, but the URL says https://"),
			"Use http:// only for a local `pvectl sim` (loopback); PVE itself serves HTTPS on port 8006: check the port."
	case errors.As(err, &dl):
		what := fmt.Sprintf("PVE did not answer %s within %s", req, durfmt.Format(dl.Timeout))
		if dl.Phase == "body" {
			what = fmt.Sprintf("PVE's answer to %s did not finish within %s", req, durfmt.Format(dl.Timeout))
		}
		if ctx := strings.TrimSuffix(where, req); ctx != "" {
			what += " (" + strings.TrimSuffix(ctx, ": ") + ")"
		}
		return what, "Check that PVE (pveproxy) is up and not overloaded; if it is only slow, raise --request-timeout."
	case errors.Is(err, syscall.ECONNREFUSED):
		addr := ""
		if errors.As(err, &oe) && oe.Addr != nil {
			addr = " at " + oe.Addr.String()
		}
		return at("cannot connect to PVE" + addr + ": connection refused"),
			"Is PVE running there, and is the port in PROXMOX_URL right (8006)? To try pvectl without a PVE, start `pvectl sim` and point PROXMOX_URL at it."
	case errors.As(err, &de):
		return at(fmt.Sprintf("cannot resolve PVE's host name %q", de.Name)),
			"Check the host in PROXMOX_URL (or the Connection's url) and this machine's DNS. To try pvectl without a PVE: `pvectl sim`."
	case errors.As(err, &oe) && oe.Op == "dial":
		return at("cannot connect to PVE: " + oe.Err.Error()),
			"Is PVE reachable from this machine (network, firewall, PROXMOX_URL)? To try pvectl without a PVE: `pvectl sim`."
	}
	return msg, ""
}
