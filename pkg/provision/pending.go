package provision

import "fmt"

// Reason says why a file will run.
type Reason string

// The reasons a file runs.
const (
	ReasonNew     Reason = "new"     // no hash recorded for it
	ReasonChanged Reason = "changed" // its hash differs from the recorded one
	ReasonForced  Reason = "forced"  // forceConfigCheck
	// ReasonAfterChange: its hash is recorded and matches, but an earlier
	// file in the list runs and Policy.RerunAfterChange is set.
	ReasonAfterChange Reason = "after an earlier change"
)

// Policy decides which files run beyond the new and changed ones.
type Policy struct {
	// Force runs every file (the spec's forceConfigCheck).
	Force bool
	// RerunAfterChange also runs every file that follows one that runs,
	// for lists whose later files build on the earlier ones. Off, only new
	// and changed files run (design §4).
	RerunAfterChange bool
}

// Step is one file that will run.
type Step struct {
	File   File
	Reason Reason
	// Recorded is the hash the description holds for it ("" when new).
	Recorded string
}

// Pending returns the files that must run on a guest whose description is
// desc, in list order, each with its reason. It reads the description
// alone and never touches the network: `plan` shows its answer, and Run
// opens no connection when it is empty.
func Pending(desc string, files []File, p Policy) ([]Step, error) {
	st, err := ParseDescription(desc)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Step
	for _, f := range files {
		if seen[f.Name] {
			return nil, fmt.Errorf("provision file %s is listed twice", f.Name)
		}
		seen[f.Name] = true
		rec, ok := st.Hash(f.Name)
		var r Reason
		switch {
		case !ok:
			r = ReasonNew
		case !f.matches(rec, st.Legacy):
			r = ReasonChanged
		case p.Force:
			r = ReasonForced
		case p.RerunAfterChange && len(out) > 0:
			r = ReasonAfterChange
		default:
			continue
		}
		out = append(out, Step{File: f, Reason: r, Recorded: rec})
	}
	return out, nil
}
