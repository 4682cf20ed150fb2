package engine

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/pkg/secret"
	"github.com/pvectl/pvectl/pkg/spec"
)

// secretRef is what a plan file keeps of a secret value it leaves out:
// the variable the value was read from, and a keyed hash of the value, so
// that `apply FILE` reads the value again and refuses one that changed
// since the plan (the plan would be applying something else). The hash is
// an HMAC-SHA-256 keyed with the file's random salt: the same secret
// hashes differently in two files, and no table of precomputed hashes
// finds it; a weak password stays guessable offline, so plan files are
// still written 0600.
type secretRef struct {
	Env  string `json:"env"`
	Hash string `json:"hash"`
}

// newSalt is a plan file's hash key.
func newSalt() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func secretHash(salt, value string) string {
	m := hmac.New(sha256.New, []byte(salt))
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))
}

// MaskDeclared shows the keys r's document declares secret (secretKeys)
// as (sensitive) in c's diff, as compare.Diff does for secret names.
func MaskDeclared(c *Change) {
	r := c.Resource
	if r == nil || len(r.SecretKeys()) == 0 {
		return
	}
	for i, d := range c.Diff {
		if !spec.IsSecretKey(r, d.Path) {
			continue
		}
		if d.Before != nil {
			c.Diff[i].Before = secret.Shown
		}
		if d.After != nil {
			c.Diff[i].After = secret.Shown
		}
	}
}

// secretRefs are the references of the secret values c's file form
// leaves out (keys in dropped), for those read from a variable.
func secretRefs(c *Change, dropped []string, salt string) map[string]secretRef {
	r := c.Resource
	if r == nil || len(r.SecretEnv()) == 0 {
		return nil
	}
	own := r.OwnFields()
	out := map[string]secretRef{}
	for _, k := range dropped {
		env := r.SecretEnv()[k]
		if env == "" {
			continue
		}
		v, ok := r.Params.Lookup(k)
		if !ok {
			if s, isStr := own[k].(string); isStr {
				v, ok = s, true
			}
		}
		if ok {
			out[k] = secretRef{Env: env, Hash: secretHash(salt, v)}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resolveSecrets puts back the values of a saved change's references,
// read from their variables: each one found and unchanged is restored
// (in the resource's parameters or own keys, and in the update's
// parameters when the update sends it) and no longer Redacted. An unset
// variable leaves the key Redacted (apply then refuses to create or
// change, naming it); a changed value is an error.
func resolveSecrets(c *Change, refs map[string]secretRef, salt string, sentInUpdate []string, getenv func(string) (string, bool)) error {
	for _, k := range slices.Sorted(maps.Keys(refs)) {
		ref := refs[k]
		v, ok := getenv(ref.Env)
		if !ok {
			continue
		}
		if !hmac.Equal([]byte(secretHash(salt, v)), []byte(ref.Hash)) {
			return fmt.Errorf("%s: $%s is not the value spec.%s had when the plan was made: plan again", c.Address, ref.Env, k)
		}
		if c.Resource != nil && !restoreOwn(c.Resource.Keys, k, v) {
			if c.Resource.Params == nil {
				c.Resource.Params = spec.NewParams(0)
			}
			c.Resource.Params.Set(k, v)
		}
		if slices.Contains(sentInUpdate, k) {
			if c.Params == nil {
				c.Params = map[string]string{}
			}
			c.Params[k] = v
		}
		c.Redacted = slices.DeleteFunc(c.Redacted, func(s string) bool { return s == k })
	}
	if len(c.Redacted) == 0 {
		c.Redacted = nil
	}
	return nil
}

// restoreOwn sets the top-level own key name (a string or *string field
// of the kind's keys struct) to v; false when keys has no such field.
func restoreOwn(keys any, name, v string) bool {
	rv := reflect.ValueOf(keys)
	if keys == nil || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	return setField(rv.Elem(), name, v)
}

func setField(sv reflect.Value, name, v string) bool {
	t := sv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fv := sv.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct && setField(fv, name, v) {
			return true
		}
		if !f.IsExported() || tag != name {
			continue
		}
		switch {
		case fv.Kind() == reflect.String:
			fv.SetString(v)
			return true
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.String:
			p := reflect.New(fv.Type().Elem())
			p.Elem().SetString(v)
			fv.Set(p)
			return true
		}
	}
	return false
}

// resolveFile resolves every change's references (Unmarshal).
func resolveFile(f *planFile, getenv func(string) (string, bool)) error {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	for _, fc := range f.Changes {
		if len(fc.Secrets) == 0 {
			continue
		}
		if err := resolveSecrets(fc.Change, fc.Secrets, f.Salt, fc.SentSecrets, getenv); err != nil {
			return err
		}
	}
	return nil
}
