package conformance

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fragment is a handcrafted apidoc in the official layout.
const fragment = `[
 {"path": "/version", "text": "version", "info": {"GET": {
   "parameters": {"additionalProperties": 0},
   "returns": {"type": "object", "properties": {
     "version": {"type": "string"}, "release": {"type": "string"},
     "console": {"type": "string", "optional": 1, "enum": ["applet", "vv", "html5", "xtermjs"]}}}}}},
 {"path": "/nodes", "text": "nodes", "children": [
  {"path": "/nodes/{node}", "text": "{node}", "children": [
   {"path": "/nodes/{node}/qemu", "text": "qemu", "info": {
    "GET": {"parameters": {"additionalProperties": 0, "properties": {
       "node": {"type": "string", "format": "pve-node"},
       "full": {"type": "boolean", "optional": 1}}},
     "returns": {"type": "array", "items": {"type": "object", "properties": {
       "vmid": {"type": "integer"}, "name": {"type": "string", "optional": 1},
       "template": {"type": "boolean", "optional": 1}, "cpu": {"type": "number", "optional": 1},
       "status": {"type": "string", "enum": ["stopped", "running"]}}}}},
    "POST": {"parameters": {"additionalProperties": 0, "properties": {
       "node": {"type": "string", "format": "pve-node"},
       "vmid": {"type": "integer", "format": "pve-vmid", "minimum": 100, "maximum": 999999999},
       "net[n]": {"type": "string", "optional": 1, "format": {
         "model": {"type": "string", "default_key": 1, "enum": ["virtio", "e1000"]},
         "bridge": {"type": "string", "optional": 1},
         "virtio": {"alias": "macaddr", "keyAlias": "model"},
         "macaddr": {"type": "string", "optional": 1, "format": "mac-addr"}}}}},
     "returns": {"type": "string"}}}},
   {"path": "/nodes/{node}/dns", "text": "dns", "info": {
    "GET": {"parameters": {"properties": {"node": {"type": "string"}}},
     "returns": {"type": "object", "additionalProperties": 0, "properties": {
       "search": {"type": "string", "optional": 1}, "dns1": {"type": "string", "optional": 1}}}}}},
   {"path": "/nodes/{node}/upload", "text": "upload", "info": {
    "POST": {"parameters": {"properties": {"node": {"type": "string"},
       "content": {"type": "string", "enum": ["iso", "vztmpl"]}, "filename": {"type": "string"}}},
     "returns": {"type": "string"}}}}]}]}
]`

func fragmentChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := Parse([]byte(fragment))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func errStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func TestRequestFragment(t *testing.T) {
	c := fragmentChecker(t)
	tests := []struct {
		name, method, path string
		params             url.Values
		want               []string
	}{
		{"valid create", "POST", "/nodes/pve/qemu", url.Values{"vmid": {"100"}, "net0": {"virtio=BC:24:11:00:00:01,bridge=vmbr0"}}, nil},
		{"query merged", "GET", "/nodes/pve/qemu?full=1", nil, nil},
		{"bad query bool", "GET", "/nodes/pve/qemu?full=2", nil, []string{"GET /nodes/{node}/qemu: parameter full: type check ('boolean') failed - got '2'"}},
		{"missing vmid and unknown param", "POST", "/nodes/pve/qemu", url.Values{"cores": {"2"}}, []string{
			"POST /nodes/{node}/qemu: parameter cores: property is not defined in schema and the schema does not allow additional properties",
			"POST /nodes/{node}/qemu: parameter vmid: property is missing and it is not optional",
		}},
		{"bad net sub-key", "POST", "/nodes/pve/qemu", url.Values{"vmid": {"100"}, "net0": {"virtio,tag=5"}}, []string{
			"POST /nodes/{node}/qemu: parameter net0: invalid format - property 'tag' is not defined",
		}},
		{"bad path variable", "GET", "/nodes/pve_1/qemu", nil, []string{
			"GET /nodes/{node}/qemu: parameter node: invalid format - value does not look like a valid node name",
		}},
		{"unknown path", "GET", "/nodes/pve/lxc", nil, []string{"GET /nodes/pve/lxc: no such path in the API schema"}},
		{"unknown method", "DELETE", "/nodes/pve/qemu", nil, []string{"DELETE /nodes/pve/qemu: method not allowed by the API schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errStrings(c.Request(tt.method, tt.path, tt.params))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponseFragment(t *testing.T) {
	c := fragmentChecker(t)
	tests := []struct {
		name, method, path string
		status             int
		body               string
		want               []string
	}{
		{"version ok", "GET", "/version", 200, `{"data":{"version":"9.1.4","release":"9.1","console":"xtermjs"}}`, nil},
		{"version missing and wrong", "GET", "/version", 200, `{"data":{"version":9,"console":"telnet"}}`, []string{
			"GET /version: response data.console: value telnet is not one of applet, vv, html5, xtermjs",
			"GET /version: response data.version: got number 9, want string",
			"GET /version: response data.release: property is missing and it is not optional",
		}},
		{"no data", "GET", "/version", 200, `{"version":"9"}`, []string{`GET /version: status 200: body has no "data"`}},
		{"not json", "GET", "/version", 200, `<html>`, []string{"GET /version: status 200: body is not a JSON object"}},
		{"list ok with 0/1 booleans", "GET", "/nodes/pve/qemu", 200,
			`{"data":[{"vmid":100,"status":"running","template":0,"cpu":0.25},{"vmid":101,"status":"stopped","template":true,"name":null}]}`, nil},
		{"list bad items", "GET", "/nodes/pve/qemu", 200,
			`{"data":[{"vmid":"100","status":"running"},{"vmid":1.5,"status":"paused","template":2},{"vmid":1e2,"status":"running"}]}`, []string{
				`GET /nodes/pve/qemu: response data[0].vmid: got string (3 bytes), want integer`,
				"GET /nodes/pve/qemu: response data[1].status: value paused is not one of stopped, running",
				"GET /nodes/pve/qemu: response data[1].template: got number 2, want boolean",
				"GET /nodes/pve/qemu: response data[1].vmid: got number 1.5, want integer",
				"GET /nodes/pve/qemu: response data[2].vmid: got number 1e2, want integer",
			}},
		{"list not array", "GET", "/nodes/pve/qemu", 200, `{"data":{}}`, []string{"GET /nodes/pve/qemu: response data: got object, want array"}},
		{"closed object", "GET", "/nodes/pve/dns", 200, `{"data":{"search":"lan","digest":"x"}}`, []string{
			"GET /nodes/pve/dns: response data.digest: property is not defined in the return schema",
		}},
		{"upid string", "POST", "/nodes/pve/qemu", 200, `{"data":"UPID:pve:0000A:0000B:6500000A:qmcreate:100:root@pam:"}`, nil},
		{"error envelope ok", "POST", "/nodes/pve/qemu", 400, `{"data":null,"message":"Parameter verification failed.\n","errors":{"vmid":"property is missing and it is not optional"}}`, nil},
		{"error envelope bad", "POST", "/nodes/pve/qemu", 500, `{"data":{},"message":3,"errors":{"vmid":1}}`, []string{
			`POST /nodes/pve/qemu: status 500: error body must have "data": null`,
			`POST /nodes/pve/qemu: status 500: "message" must be a string`,
			"POST /nodes/pve/qemu: status 500: errors.vmid must be a string",
		}},
		{"unknown path", "GET", "/nope", 200, `{"data":null}`, []string{"GET /nope: no such path in the API schema"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errStrings(c.Response(tt.method, tt.path, tt.status, []byte(tt.body)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Response (-want +got):\n%s", diff)
			}
		})
	}
}

type collected struct {
	mu sync.Mutex
	vs []string
}

func (c *collected) report(v Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := "request"
	if v.Response {
		kind = "response"
	}
	c.vs = append(c.vs, kind+" "+v.Method+" "+v.Path+": "+v.Err.Error())
}

func TestMiddleware(t *testing.T) {
	c := fragmentChecker(t)
	var seenBody string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		seenBody = string(b)
		switch {
		case r.URL.Path == "/api2/json/version":
			w.Write([]byte(`{"data":{"version":"9.1.4"}}`))
		case r.Method == "POST" && r.URL.Path == "/api2/json/nodes/pve/qemu":
			w.Write([]byte(`{"data":"UPID:pve:0000A:0000B:6500000A:qmcreate:100:root@pam:"}`))
		case r.URL.Path == "/api2/json/nodes/pve/upload":
			w.Write([]byte(`{"data":"UPID:pve:0000A:0000B:6500000A:imgcopy::root@pam:"}`))
		default:
			w.WriteHeader(http.StatusNotImplemented)
			w.Write([]byte(`{"data":null,"message":"not here"}`))
		}
	})
	tests := []struct {
		name, method, target, ctype, body string
		wantBody                          string
		want                              []string
	}{
		{"response missing release", "GET", "/api2/json/version", "", "", "", []string{
			"response GET /version: GET /version: response data.release: property is missing and it is not optional",
		}},
		{"form body checked and restored", "POST", "/api2/json/nodes/pve/qemu", "application/x-www-form-urlencoded", "vmid=100&net0=virtio%2Cbridge%3Dvmbr0",
			"vmid=100&net0=virtio%2Cbridge%3Dvmbr0", nil},
		{"bad form body", "POST", "/api2/json/nodes/pve/qemu", "application/x-www-form-urlencoded", "vmid=42",
			"vmid=42", []string{"request POST /nodes/pve/qemu: POST /nodes/{node}/qemu: parameter vmid: value must have a minimum value of 100"}},
		{"json body", "POST", "/api2/json/nodes/pve/qemu", "application/json", `{"vmid":100,"net0":"e1000"}`, `{"vmid":100,"net0":"e1000"}`, nil},
		{"multipart checks query only", "POST", "/api2/json/nodes/pve/upload?content=iso", "multipart/form-data; boundary=x", "--x--\r\n", "--x--\r\n", nil},
		{"not api traffic", "GET", "/healthz", "", "", "", nil},
		{"unknown path", "GET", "/api2/json/nodes/pve/lxc", "", "", "", []string{
			"request GET /nodes/pve/lxc: GET /nodes/pve/lxc: no such path in the API schema",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got collected
			srv := httptest.NewServer(Middleware(c, handler, got.report))
			defer srv.Close()
			req, err := http.NewRequest(tt.method, srv.URL+tt.target, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if seenBody != tt.wantBody {
				t.Errorf("handler saw body %q want %q", seenBody, tt.wantBody)
			}
			if diff := cmp.Diff(tt.want, got.vs); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.json")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load: got %v want an error", err)
	}
}
