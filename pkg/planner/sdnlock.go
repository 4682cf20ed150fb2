package planner

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// SDN's cluster lock (PVE 9: pve-network src/PVE/API2/Network/SDN.pm
// lock and release_lock, src/PVE/Network/SDN.pm lock_sdn_config): while
// it is held, every SDN write and the commit need its token, so nobody
// else's edit slips in between pvectl's writes and its commit. The
// apply's first SDN write takes it (allow-pending: pending changes the
// plan showed may be there, and the commit checks them), the commit
// releases it with release-lock, and Apply gives it back on every other
// path (heldlock.go). The token is a secret of the run: it is sent as
// lock-token (a secret name, pkg/secret) and never shown.

// sdnLockKey is the key of a connection's SDN lock among the apply's
// held locks.
func sdnLockKey(x *engine.Execution) string {
	return x.Change.Resource.Connection + "\x00" + engine.SDNScope
}

// sdnToken is the token of the connection's SDN lock, taken now if this
// apply does not hold it yet.
func sdnToken(ctx context.Context, x *engine.Execution) (string, error) {
	cl := x.Client
	return x.Locks.Take(ctx, sdnLockKey(x), func(ctx context.Context) (string, error) {
		var token string
		if err := cl.Do(ctx, http.MethodPost, "/cluster/sdn/lock", url.Values{"allow-pending": {"1"}}, &token); err != nil {
			return "", fmt.Errorf("take SDN's lock: %w", err)
		}
		if token == "" {
			return "", fmt.Errorf("take SDN's lock: PVE answered no token")
		}
		return token, nil
	}, func(ctx context.Context, token string) error { return releaseSDNLock(ctx, cl, token) })
}

// releaseSDNLock gives the lock back; a lock that is not held any more
// (released by a commit) is no error.
func releaseSDNLock(ctx context.Context, cl *pve.Client, token string) error {
	if err := cl.Do(ctx, http.MethodDelete, "/cluster/sdn/lock", url.Values{"lock-token": {token}}, nil); err != nil {
		return fmt.Errorf("release SDN's lock: %w", err)
	}
	return nil
}
