package pve

import (
	"encoding/json"
	"maps"
	"testing"
)

// referenceConfig is what encoding/json makes of a config answer, the way
// Config's decoder worked before decodeConfigJSON: the members as raw
// JSON, each rendered by formValue (the last of a repeated key wins).
func referenceConfig(b []byte) (map[string]string, bool, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, false, err
	}
	if raw == nil {
		return nil, true, nil
	}
	out := map[string]string{}
	for k, v := range raw {
		s, ok, err := formValue(v)
		if err != nil {
			return nil, false, err
		}
		if ok {
			out[k] = s
		}
	}
	return out, false, nil
}

func scanned(b []byte) (map[string]string, bool, error) {
	out := map[string]string{}
	null, err := decodeConfigJSON(b, func(k, v string, set bool) {
		if set {
			out[k] = v
		} else {
			delete(out, k)
		}
	})
	if null {
		out = nil
	}
	return out, null, err
}

var configJSONCases = []string{
	`{"memory":512,"name":"vm1","onboot":true,"template":false,"desc":null}`,
	` { "a" : "b" , "c" : 1.50 , "d" : 2e3 , "e" : -0 } `,
	`{"net0":"virtio=BC:24:11:00:00:01,bridge=vmbr0","digest":"0123abcd"}`,
	`{"esc":"a\"b\\c\/d\u00e9\n","uni":"héllo","ctl":"\u0001"}`,
	`{"nested":{"b":[1, 2, {"c":"}"}]},"arr":[ "x" , null ]}`,
	`{"dup":"1","dup":"2"}`, `{"gone":"1","gone":null}`,
	`{}`, `null`, ` null `, `{"big":12345678901234567890,"f":1.25e-3,"neg":-7}`,
	"{\"bad\":\"\xff\xfe\"}", `{"k\u0041":"v"}`,
	// Refused by both.
	``, ` `, `[]`, `"s"`, `1`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1 "b":2}`, `{a:1}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":+1}`, `{"a":tru}`, `{"a":nul}`,
	`{"a":"x` + "\n" + `"}`, `{"a":"\x"}`, `{"a":"\u12"}`, `{"a":[1,}]}`, `{"a":{"b"}}`, `{"a":1}x`, `{"a":1}{}`,
	`{"a":1e400}`, `nullx`, "{\"a\":\"\xef\xbb\xbf\"}", "\xef\xbb\xbf{}",
}

func TestDecodeConfigJSONMatchesEncodingJSON(t *testing.T) {
	for _, in := range configJSONCases {
		checkConfigJSON(t, []byte(in))
	}
}

func checkConfigJSON(t *testing.T, in []byte) {
	t.Helper()
	want, wantNull, wantErr := referenceConfig(in)
	got, gotNull, gotErr := scanned(in)
	switch {
	case (wantErr == nil) != (gotErr == nil):
		t.Errorf("%q: error %v, encoding/json's %v", in, gotErr, wantErr)
	case wantErr != nil:
	case gotNull != wantNull || !maps.Equal(got, want):
		t.Errorf("%q: %v (null %v), encoding/json's %v (null %v)", in, got, gotNull, want, wantNull)
	}
}

func FuzzDecodeConfigJSON(f *testing.F) {
	for _, in := range configJSONCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkConfigJSON(t, in) })
}

// A VM's config answer as PVE gives it, decoded through encoding/json
// (the way before) and in one pass.
func BenchmarkDecodeConfig(b *testing.B) {
	in := []byte(`{"boot":"order=scsi0;net0","cores":1,"cpu":"x86-64-v2-AES","description":"[pvectl-owner: stack=default,vmid=1000]","digest":"5b2d5d1e3f4b2c9c7e0b6b1f1c3a9e8d7f6a5b4c","memory":"512","meta":"creation-qemu=9.0.2,ctime=1733000000","name":"vm1000","net0":"virtio=BC:24:12:00:03:E8,bridge=vmbr0","numa":0,"ostype":"l26","scsihw":"virtio-scsi-single","smbios1":"uuid=3c3b4f9e-2a61-4f0e-9a0e-0b8c6a4f2d11","sockets":1,"tags":"pvectl","vmgenid":"8e5b7d0c-5c4e-4d51-9a3b-2f1f6b9c1e22"}`)
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := referenceConfig(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var c Config
			if err := c.UnmarshalJSON(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// referenceEnvelope is encoding/json's reading of an envelope, the way
// decodeEnvelope read it before envelopeMembers.
func referenceEnvelope(b []byte) (data, changes, total []byte, err error) {
	var env struct {
		Data    json.RawMessage `json:"data"`
		Changes json.RawMessage `json:"changes"`
		Total   json.RawMessage `json:"total"`
	}
	err = json.Unmarshal(b, &env)
	return env.Data, env.Changes, env.Total, err
}

var envelopeCases = []string{
	`{"data":{"a":1}}`, `{"data":null}`, `{"data":"UPID:x"}`, `{"data":[1,{"b":"}"}],"total":3}`,
	` { "changes" : "--- a" , "data" : [ ] } `, `{"Data":1,"data":2}`, `{"DATA":true}`, `{"success":1,"data":0}`,
	`null`, `{}`, `{"data":{"x":"\u00e9\\\""}}`, `{"total":"12","data":[]}`,
	// Refused by both.
	``, `[]`, `{"data":1,}`, `{"data":}`, `{"other":[1,}]}`, `{"total":{]}`, `{"data":1}x`, `{"a":tru}`, `{"a":"\x"}`,
}

func TestEnvelopeMembersMatchEncodingJSON(t *testing.T) {
	for _, in := range envelopeCases {
		checkEnvelope(t, []byte(in))
	}
}

// checkEnvelope: the same members as encoding/json, and the same
// verdict once the members are decoded (envelopeMembers leaves data's
// and changes' insides to their readers, which check them).
func checkEnvelope(t *testing.T, in []byte) {
	t.Helper()
	wd, wc, wt, werr := referenceEnvelope(in)
	gd, gc, gt, gerr := envelopeMembers(in)
	if gerr == nil && (len(gd) > 0 && !json.Valid(gd) || len(gc) > 0 && !json.Valid(gc)) {
		gerr = errJSONEnd // what the member's reader would find
	}
	switch {
	case (werr == nil) != (gerr == nil):
		t.Errorf("%q: error %v, encoding/json's %v", in, gerr, werr)
	case werr != nil:
	case string(gd) != string(wd) || string(gc) != string(wc) || string(gt) != string(wt):
		t.Errorf("%q: data %q changes %q total %q, encoding/json's %q %q %q", in, gd, gc, gt, wd, wc, wt)
	}
}

func FuzzEnvelopeMembers(f *testing.F) {
	for _, in := range envelopeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkEnvelope(t, in) })
}

// referenceRow is encoding/json's reading of a resource row, the way
// ClusterResource's decoder worked before (through an aux struct).
func referenceRow(b []byte) (ClusterResource, error) {
	type plain ClusterResource
	var r ClusterResource
	aux := struct {
		*plain
		VMID     flexInt  `json:"vmid"`
		Template flexBool `json:"template"`
	}{plain: (*plain)(&r)}
	err := json.Unmarshal(b, &aux)
	r.VMID, r.Template = int(aux.VMID), bool(aux.Template)
	return r, err
}

var rowCases = []string{
	`{"id":"qemu/100","type":"qemu","node":"pve","vmid":100,"name":"a","status":"running","template":0,"maxmem":2048,"cpu":0.5}`,
	`{"vmid":"101","template":1,"tags":"x;y","pool":"p","lock":"backup","Storage":"local","CONTENT":"iso","extra":{"a":[1]}}`,
	`{"name":null,"name":"b"}`, `{"name":"b","name":null}`, `null`, `{}`, `{"vmid":null,"template":"0"}`,
	`{"name":"\u00e9\"x"}`, "{\"name\":\"\xff\"}",
	// Refused by both.
	`{"name":5}`, `{"name":true}`, `{"vmid":"x"}`, `{"template":2}`, `{"vmid":1.5e400}`, `{"id":{"a":1}}`,
	`{"x":[1,}]}`, `{"name":"a",}`, `[]`, `{"name":"a"}x`, `{"template":[}`, `{"vmid":[1,}`,
}

func TestClusterResourceMatchesEncodingJSON(t *testing.T) {
	for _, in := range rowCases {
		checkRow(t, []byte(in))
	}
}

func checkRow(t *testing.T, in []byte) {
	t.Helper()
	want, werr := referenceRow(in)
	var got ClusterResource
	gerr := got.UnmarshalJSON(in)
	switch {
	case (werr == nil) != (gerr == nil):
		t.Errorf("%q: error %v, encoding/json's %v", in, gerr, werr)
	case werr == nil && got != want:
		t.Errorf("%q: %+v, encoding/json's %+v", in, got, want)
	}
	// The row as one of a list: the same verdict and row.
	list := append(append([]byte(`[{"id":"x"}, `), in...), ']')
	var rows resourceList
	lerr := rows.decodeAnswer(list)
	var ref []ClusterResource
	rerr := json.Unmarshal(list, &ref)
	switch {
	case (lerr == nil) != (rerr == nil):
		t.Errorf("list %q: error %v, encoding/json's %v", list, lerr, rerr)
	case lerr == nil && (len(rows) != len(ref) || rows[1] != ref[1]):
		t.Errorf("list %q: %+v, encoding/json's %+v", list, rows, ref)
	}
}

func FuzzClusterResourceJSON(f *testing.F) {
	for _, in := range rowCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkRow(t, in) })
}
