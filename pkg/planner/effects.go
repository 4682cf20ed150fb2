package planner

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/internal/durfmt"
	"github.com/pvectl/pvectl/pkg/planner/compare"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// EffectKind is what changing one spec field of an existing object makes
// the planner do.
type EffectKind int

const (
	// InPlace fields are updated on the object as it is.
	InPlace EffectKind = iota + 1
	// Replaces fields make the object be removed and created anew.
	Replaces
	// Names fields identify the object: a new value is another object,
	// created, while the one the old value named is left alone (pvectl
	// keeps no state to know it was meant).
	Names
	// CreateOnly fields are taken by PVE's create call only: later
	// changes are not compared and change nothing.
	CreateOnly
	// Fixed fields have the one value the kind allows.
	Fixed
)

// Effect is what changing a field of an existing object plans, and why.
type Effect struct {
	Kind EffectKind
	// How is the call an in-place change is carried out with.
	How string
	// Why explains a replace, an identity, a create-only field.
	Why string
	// Note tells what else the planner does or refuses.
	Note string
	// Live is PVE's rule for an in-place change of a running guest (nil
	// for other objects).
	Live *pve.LiveRule
}

// fieldEffecter kinds know effects beyond what the spec facts say.
type fieldEffecter interface {
	fieldEffect(ks *spec.KindSpec, key, sub string) (Effect, bool)
}

// FieldEffect says what changing key (and its property-string sub-key
// sub, if not empty) of an existing object of kind plans: the kind's own
// rules first, then the spec facts (fixed values, identities, parameters
// only the create call takes).
func FieldEffect(kind, key, sub string) (Effect, error) {
	k, err := engine.KindOf(kind)
	if err != nil {
		return Effect{}, err
	}
	ks, ok := spec.SpecOf(kind)
	if !ok {
		return Effect{}, fmt.Errorf("kind %s is not supported", kind)
	}
	e, err := kindEffect(k, ks, key, sub)
	if err != nil {
		return Effect{}, err
	}
	// A kind that is only kept or rebuilt has no in-place change, whatever
	// the update call of the kind it is built on says.
	if why := k.Traits().Rebuilt; why != "" && e.Kind == InPlace {
		e = Effect{Kind: Replaces, Why: why}
	}
	return e, nil
}

func kindEffect(k engine.KindOps, ks *spec.KindSpec, key, sub string) (Effect, error) {
	if fe, ok := k.(fieldEffecter); ok {
		if e, ok := fe.fieldEffect(ks, key, sub); ok {
			return e, nil
		}
	}
	return factEffect(ks, key)
}

// Rebuilt says, for a kind whose objects are never updated in place (only
// kept as they are or rebuilt), that it is so and when they are rebuilt;
// ok is false for the other kinds, which change in place with the kind's
// update call.
func Rebuilt(kind string) (why string, ok bool) {
	k, err := engine.KindOf(kind)
	if err != nil {
		return "", false
	}
	why = k.Traits().Rebuilt
	return why, why != ""
}

// Commits names what a committing kind's change commits ("network",
// "SDN configuration"): what the kinds it commits for stage. "" for a
// kind that commits nothing.
func Commits(kind string) string {
	k, err := engine.KindOf(kind)
	if err != nil || k.Traits().Commits == "" {
		return ""
	}
	for _, name := range slices.Sorted(maps.Keys(engine.Kinds)) {
		if t := engine.Kinds[name].Traits(); t.CommittedBy == kind && t.StagedWhat != "" {
			return t.StagedWhat
		}
	}
	return ""
}

// factEffect is the effect the spec facts decide.
func factEffect(ks *spec.KindSpec, key string) (Effect, error) {
	update := ""
	if ks.Update != nil {
		update = ks.Update.String()
	}
	if _, ok := ks.OwnKey(key); ok {
		return Effect{Kind: InPlace}, nil
	}
	p, ok := ks.Param(key)
	if !ok {
		return Effect{}, fmt.Errorf("%s has no field %q", ks.Kind, key)
	}
	switch {
	case p.Fixed != "":
		return Effect{Kind: Fixed, Why: fmt.Sprintf("a %s always has %s=%s", ks.Kind, key, p.Fixed)}, nil
	case p.Identifies || p.InPath:
		return Effect{Kind: Names, Why: fmt.Sprintf("%s names the %s", key, nounOf(ks))}, nil
	case p.CreateOnly:
		return Effect{Kind: CreateOnly, Why: fmt.Sprintf("only %s takes it; %s has no such parameter", ks.Create, update)}, nil
	}
	return Effect{Kind: InPlace, How: update}, nil
}

func nounOf(ks *spec.KindSpec) string {
	if ks.Noun != "" {
		return ks.Noun
	}
	return "object"
}

// fieldEffect: a guest moves nodes by migration, joins pools through
// /pools, grows disks with resize and keeps create parameters out of the
// comparison; on a running guest, PVE's hot-plug rules decide when an
// in-place change takes effect.
func (g guest) fieldEffect(ks *spec.KindSpec, key, sub string) (Effect, bool) {
	base := fmt.Sprintf("/nodes/{node}/%s/{vmid}", g.typ)
	live := func(key, sub string) *pve.LiveRule {
		r := pve.GuestLiveRule(g.typ, key, sub)
		return &r
	}
	switch {
	case key == "node":
		return Effect{Kind: InPlace, How: "POST " + base + "/migrate", Note: g.migrateNote}, true
	case key == "vmid":
		return Effect{Kind: Names, Why: "vmid names the " + ks.Noun}, true
	case key == g.nameParam:
		return Effect{Kind: InPlace, How: ks.Update.String(), Live: live(key, ""),
			Note: fmt.Sprintf("without vmid, %s is how pvectl finds the %s: a new value then names another one, which is created (the old one is left alone)", key, ks.Noun)}, true
	case key == "pool":
		return Effect{Kind: InPlace, How: "PUT /pools (allow-move=1)", Note: "pool membership is not part of the config"}, true
	case key == "running":
		return Effect{Kind: InPlace, How: "POST " + base + "/status/start or …/status/shutdown",
			Note: fmt.Sprintf("a shutdown that takes longer than %s is a hard stop", durfmt.Format(shutdownTimeout*time.Second))}, true
	case g.replaceKeys[key] != "":
		return Effect{Kind: Replaces, Why: g.replaceKeys[key]}, true
	case g.notInConfig[key]:
		return Effect{Kind: CreateOnly, Why: "PVE takes it when creating the " + ks.Noun + " and does not keep it in the config"}, true
	}
	p, ok := ks.Param(key)
	if !ok {
		return Effect{}, false
	}
	if vk := compare.VolumeKey(p.SubKeys()); vk != "" {
		resize := "PUT " + base + "/resize"
		move := "POST " + base + g.moveSub + " (delete=1)"
		if g.stopsToMove {
			move = "POST " + base + g.moveSub + " (delete=1; PVE moves a container's volumes only while it is stopped, so a running one is shut down and started again)"
		}
		switch {
		case compare.CreateOnly[sub]:
			return Effect{Kind: CreateOnly, Why: sub + " is read when the disk is made; PVE does not keep it"}, true
		case sub == "size":
			return Effect{Kind: InPlace, How: resize, Note: "a disk only grows (a running guest too); a smaller size is refused at plan time"}, true
		case sub == "" || sub == vk:
			return Effect{Kind: InPlace, How: ks.Update.String(), Live: live(key, sub),
				Note: fmt.Sprintf("a larger size (STORAGE:SIZE) grows the disk with %s, a smaller one is refused at plan time, and another storage moves the disk there with %s", resize, move)}, true
		}
	}
	return Effect{Kind: InPlace, How: ks.Update.String(), Live: live(key, sub)}, true
}
