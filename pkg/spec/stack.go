package spec

import (
	"fmt"

	"github.com/pvectl/pvectl/internal/lazyre"
)

// stackRE is what a stack name may be: it is written into guests'
// descriptions as "[pvectl-owner: stack=NAME,vmid=N]" (planner/marks),
// so it holds none of the block's separators.
var stackRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// CheckStack refuses a stack name pvectl cannot write into an ownership
// mark.
func CheckStack(name string) error {
	if !stackRE.MatchString(name) {
		return fmt.Errorf("stack %q: use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", name)
	}
	return nil
}
