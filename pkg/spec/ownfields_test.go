package spec

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fillRandom sets t's fields that fastOwnFields walks to random values:
// pointers nil or set, strings and lists empty or not, so that every
// omitempty branch is taken over the rounds.
func fillRandom(v reflect.Value, rng *rand.Rand) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.CanSet() {
			continue
		}
		if f.Kind() == reflect.Struct {
			fillRandom(f, rng)
			continue
		}
		if f.Kind() == reflect.Pointer {
			if rng.IntN(2) == 0 {
				continue
			}
			f.Set(reflect.New(f.Type().Elem()))
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString([]string{"", "x", "line one\nline two", "ü ${VAR}"}[rng.IntN(4)])
		case reflect.Bool:
			f.SetBool(rng.IntN(2) == 0)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt([]int64{0, 1, -7, 4094}[rng.IntN(4)])
		case reflect.Slice:
			switch rng.IntN(3) {
			case 0: // nil
			case 1:
				f.Set(reflect.MakeSlice(f.Type(), 0, 0))
			default:
				if f.Type().Elem().Kind() == reflect.String {
					f.Set(reflect.ValueOf([]string{"a", "b"}).Convert(f.Type()))
				}
			}
		}
	}
}

// OwnFields walks a Keys struct as the JSON round trip reads it, for
// every kind's Keys, whatever is set; the guest kinds (most resources of
// a big plan) take the walk.
func TestOwnFieldsFast(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	walked := map[string]bool{}
	for name, k := range kindTable() {
		if k.Keys == nil {
			continue
		}
		typ := reflect.TypeOf(k.Keys).Elem()
		for round := range 200 {
			keys := reflect.New(typ)
			fillRandom(keys.Elem(), rng)
			fast := map[string]any{}
			if !fastOwnFields(keys.Interface(), fast) {
				break
			}
			walked[name] = true
			if diff := cmp.Diff(ownFieldsJSON(keys.Interface()), fast); diff != "" {
				t.Fatalf("%s round %d (%s): the walk differs from the JSON round trip (-json +walk):\n%s", name, round, typ, diff)
			}
		}
	}
	for _, kind := range []string{KindQemuVM, KindLxcContainer, KindPool} {
		if !walked[kind] {
			t.Errorf("%s: OwnFields takes the JSON round trip; want the walk", kind)
		}
	}
	t.Log(fmt.Sprint(len(walked), " kinds walked"))
}
