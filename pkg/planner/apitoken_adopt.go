package planner

import (
	"context"
	"fmt"
	"net/url"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"
)

// Adopt finishes a token create whose answer was lost (createprobe.go):
// that answer was the only place PVE shows the token's secret, so the
// token PVE made is given a new one (PUT …?regenerate=1), delivered as a
// create's would be. Nobody can hold the old secret: its only copy was
// the lost answer.
func (tokenKind) Adopt(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	uid, tid := tokenIDs(c.Resource)
	s, err := x.Client.UpdateToken(ctx, uid, tid, url.Values{"regenerate": {"1"}})
	if err != nil {
		return fmt.Errorf("API token %s was made, but its secret was in the lost answer, and regenerating it failed: %w", fullTokenID(c.Resource), err)
	}
	x.Msg("its secret was in the lost answer: regenerated")
	return deliverSecret(x, c, s)
}
