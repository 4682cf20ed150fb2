package planner

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
)

// A firewall's update is many small writes (rules, aliases, IP sets and
// their entries, options). One whose answer does not prove PVE refused it
// (pve.OutcomeUnknown) is looked up before anything else is sent, as
// createChecked does for whole objects: done, the apply goes on; not done,
// it is sent again when sending it twice cannot make two of anything.
//
// A rule insert is the exception: PVE's POST …/rules takes no name and
// checks no digest (pve-firewall src/PVE/API2/Firewall/Rules.pm,
// register_create_rule), and a request that timed out may still be
// waiting for the firewall config lock (lock_clusterfw_conf, 10 s), so a
// second POST could make the rule twice. Its unsure answer is an error
// unless the list shows it made; the next plan shows what is left. Every
// other write either names its object (an alias, an IP set, an entry:
// PVE refuses a second create of the same name) or carries the digest of
// the list it changes (PUT and DELETE by position, options), so a late
// first copy makes the second one fail, never doubles it.

// stepState is what reading back an unsure write found.
type stepState int

const (
	stepOther     stepState = iota // neither as before nor as sent: someone else
	stepDone                       // as the write would leave it
	stepUntouched                  // as before the write
)

// unsureStep runs send; when its answer does not prove a refusal, look
// decides what PVE did. resend says whether the write may be sent again
// when PVE shows it undone.
func unsureStep(ctx context.Context, x *engine.Execution, resend bool, send func() error, look func(context.Context) (stepState, error)) error {
	for attempt := 1; ; attempt++ {
		err := send()
		if err == nil || ctx.Err() != nil {
			return err
		}
		unknown := pve.OutcomeUnknown(err)
		if !unknown && (attempt == 1 || !engine.AlreadyExists(err)) {
			return err
		}
		got, lerr := look(ctx)
		switch {
		case lerr != nil:
			return fmt.Errorf("%w (outcome unknown: reading it back failed too: %v)", err, lerr)
		case got == stepDone:
			x.Msg("%s got no usable answer (%s), but PVE did it", pve.FailedRequest(err), pve.Brief(err))
			return nil
		case got == stepUntouched && resend && unknown && attempt < engine.CreateSends:
			x.Msg("%s got no usable answer (%s), and PVE did not do it: sending it again", pve.FailedRequest(err), pve.Brief(err))
			if serr := pve.Sleep(ctx, engine.CreatePause<<(attempt-1)); serr != nil {
				return fmt.Errorf("%w (while retrying: %w)", err, serr)
			}
			continue
		}
		return fmt.Errorf("%w (outcome unknown: PVE does not show it done; the next plan shows what is left)", err)
	}
}

// entryState judges one named entry of a list (an alias, an IP set entry)
// read back: want is what the write leaves (wantOK false: gone), was what
// it found (wasOK false: absent).
func entryState(got map[string]string, gotOK bool, want map[string]string, wantOK bool, was map[string]string, wasOK bool) stepState {
	same := func(a map[string]string, aOK bool) bool {
		return gotOK == aOK && (!aOK || entryLine(got) == entryLine(a))
	}
	switch {
	case same(want, wantOK):
		return stepDone
	case same(was, wasOK):
		return stepUntouched
	}
	return stepOther
}

// lookAlias reads the aliases of base back for an unsure write of name.
func lookAlias(x *engine.Execution, base, name string, want map[string]string, wantOK bool, was map[string]string, wasOK bool) func(context.Context) (stepState, error) {
	return func(ctx context.Context) (stepState, error) {
		all, err := readAliases(ctx, x.Client, base)
		got, ok := all[name]
		return entryState(got, ok, want, wantOK, was, wasOK), err
	}
}

// lookIPSet reads the IP sets of base back for an unsure create
// (exists=true) or delete of the set name.
func lookIPSet(x *engine.Execution, base, name string, exists bool) func(context.Context) (stepState, error) {
	return func(ctx context.Context) (stepState, error) {
		var sets []*pve.Config
		if err := x.Client.Do(ctx, http.MethodGet, base+"/ipset", nil, &sets); err != nil {
			return stepOther, err
		}
		there := slices.ContainsFunc(sets, func(s *pve.Config) bool { return s.Get("name") == name })
		if there == exists {
			return stepDone, nil
		}
		return stepUntouched, nil
	}
}

// lookEntry reads the IP set at set back for an unsure write of cidr.
func lookEntry(x *engine.Execution, set, cidr string, want map[string]string, wantOK bool, was map[string]string, wasOK bool) func(context.Context) (stepState, error) {
	return func(ctx context.Context) (stepState, error) {
		var rows []*pve.Config
		if err := x.Client.Do(ctx, http.MethodGet, set, nil, &rows); err != nil {
			return stepOther, err
		}
		for _, row := range rows {
			if row.Get("cidr") == cidr {
				got := map[string]string{"cidr": cidr, "nomatch": row.Get("nomatch"), "comment": row.Get("comment")}
				return entryState(got, true, want, wantOK, was, wasOK), nil
			}
		}
		return entryState(nil, false, want, wantOK, was, wasOK), nil
	}
}

// lookOptions reads the options at base back for an unsure PUT of params
// (its delete list included) over before.
func lookOptions(x *engine.Execution, base string, params url.Values, before map[string]string) func(context.Context) (stepState, error) {
	return func(ctx context.Context) (stepState, error) {
		var now *pve.Config
		if err := x.Client.Do(ctx, http.MethodGet, base+"/options", nil, &now); err != nil {
			return stepOther, err
		}
		done, untouched := true, true
		for _, k := range slices.Sorted(maps.Keys(params)) {
			switch k {
			case "digest":
				continue
			case "delete":
				for _, d := range strings.Split(params.Get(k), ",") {
					done = done && now.Get(d) == ""
					untouched = untouched && now.Get(d) == before[d]
				}
				continue
			}
			done = done && now.Get(k) == params.Get(k)
			untouched = untouched && now.Get(k) == before[k]
		}
		switch {
		case done:
			return stepDone, nil
		case untouched:
			return stepUntouched, nil
		}
		return stepOther, nil
	}
}

// lookRules reads the rule list at path back for an unsure rule write:
// before and after are the list's rule texts without and with it.
func lookRules(x *engine.Execution, path string, before, after []string) func(context.Context) (stepState, error) {
	return func(ctx context.Context) (stepState, error) {
		now, err := readRules(ctx, x.Client, path)
		texts := ruleTexts(now.Rules)
		switch {
		case err != nil:
			return stepOther, err
		case slices.Equal(texts, after):
			return stepDone, nil
		case slices.Equal(texts, before):
			return stepUntouched, nil
		}
		return stepOther, nil
	}
}
