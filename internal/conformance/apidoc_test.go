package conformance

import (
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const apidocPath = "../../testdata/pve-api/apidoc-9.1.json"

var realChecker = sync.OnceValues(func() (*Checker, error) { return Load(apidocPath) })

func loadReal(t *testing.T) *Checker {
	t.Helper()
	c, err := realChecker()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestRealRequests(t *testing.T) {
	c := loadReal(t)
	tests := []struct {
		name, method, path string
		params             url.Values
		want               []string
	}{
		{"version", "GET", "/version", nil, nil},
		{"create vm", "POST", "/nodes/pve/qemu", url.Values{
			"vmid": {"100"}, "name": {"app-vm-1"}, "memory": {"2048"}, "cores": {"2"},
			"net0": {"virtio,bridge=vmbr0,tag=100"}, "scsi0": {"local-lvm:32"}, "ide2": {"local-lvm:cloudinit"},
			"ipconfig0": {"ip=10.0.0.5/24,gw=10.0.0.1"}, "boot": {"order=scsi0"}, "tags": {"pvectl;web"},
			"sshkeys": {"ssh-ed25519%20AAAA%20me%40host"}, "scsihw": {"virtio-scsi-single"},
		}, nil},
		{"bad create vm", "POST", "/nodes/pve/qemu", url.Values{
			"vmid": {"42"}, "memory": {"lots"}, "net0": {"virtio,bridge=vmbr0,speed=10"}, "colour": {"red"},
		}, []string{
			"POST /nodes/{node}/qemu: parameter colour: property is not defined in schema and the schema does not allow additional properties",
			"POST /nodes/{node}/qemu: parameter memory: invalid format - current: type check ('integer') failed - got 'lots'",
			"POST /nodes/{node}/qemu: parameter net0: invalid format - property 'speed' is not defined",
			"POST /nodes/{node}/qemu: parameter vmid: value must have a minimum value of 100",
		}},
		{"create vm without vmid", "POST", "/nodes/pve/qemu", url.Values{"name": {"x"}}, []string{
			"POST /nodes/{node}/qemu: parameter vmid: property is missing and it is not optional",
		}},
		{"config with digest and delete", "PUT", "/nodes/pve/qemu/100/config", url.Values{
			"delete": {"net1,ipconfig1"}, "digest": {"0123456789abcdef0123456789abcdef01234567"}, "onboot": {"1"},
		}, nil},
		{"delete vm", "DELETE", "/nodes/pve/qemu/100?purge=1&destroy-unreferenced-disks=1", nil, nil},
		{"bridge", "POST", "/nodes/pve/network", url.Values{
			"iface": {"vmbr1"}, "type": {"bridge"}, "bridge_ports": {"eno2"}, "bridge_vlan_aware": {"1"}, "autostart": {"1"},
		}, nil},
		{"commit network", "PUT", "/nodes/pve/network", nil, nil},
		{"token", "POST", "/access/users/deploy@pve/token/ci", url.Values{"privsep": {"0"}, "comment": {"ci"}}, nil},
		{"bad token user", "POST", "/access/users/deploy/token/ci", nil, []string{
			"POST /access/users/{userid}/token/{tokenid}: parameter userid: invalid format - value 'deploy' does not look like a valid user name",
		}},
		{"task status", "GET", "/nodes/pve/tasks/UPID:pve:0000A1B2:0000C3D4:6500000A:qmcreate:100:root@pam:/status", nil, nil},
		{"acl", "PUT", "/access/acl", url.Values{"path": {"/vms/100"}, "roles": {"PVEVMUser"}, "tokens": {"deploy@pve!ci"}}, nil},
		{"no such path", "GET", "/nodes/pve/kubernetes", nil, []string{"GET /nodes/pve/kubernetes: no such path in the API schema"}},
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

func TestRealResponses(t *testing.T) {
	c := loadReal(t)
	tests := []struct {
		name, method, path string
		status             int
		body               string
		want               []string
	}{
		{"version", "GET", "/version", 200, `{"data":{"version":"9.1.4","release":"9.1","repoid":"02bfb50a"}}`, nil},
		{"version wrong", "GET", "/version", 200, `{"data":{"version":9.1,"repoid":"x"}}`, []string{
			"GET /version: response data.version: got number 9.1, want string",
			"GET /version: response data.release: property is missing and it is not optional",
		}},
		{"create vm", "POST", "/nodes/pve/qemu", 200, `{"data":"UPID:pve:0000A1B2:0000C3D4:6500000A:qmcreate:100:root@pam:"}`, nil},
		{"create vm bad", "POST", "/nodes/pve/qemu", 200, `{"data":null}`, []string{
			"POST /nodes/pve/qemu: response data: got null, want string",
		}},
		{"config", "GET", "/nodes/pve/qemu/100/config", 200,
			`{"data":{"name":"app","memory":"2048","cores":2,"net0":"virtio=BC:24:11:00:00:01,bridge=vmbr0","onboot":1,"digest":"abc","scsi0":"local-lvm:vm-100-disk-0,size=32G"}}`, nil},
		{"config bad cores", "GET", "/nodes/pve/qemu/100/config", 200, `{"data":{"cores":"2","digest":"abc"}}`, []string{
			"GET /nodes/pve/qemu/100/config: response data.cores: got string (1 bytes), want integer",
		}},
		{"config set null", "PUT", "/nodes/pve/qemu/100/config", 200, `{"data":null}`, nil},
		{"parameter error", "POST", "/nodes/pve/qemu", 400,
			`{"data":null,"message":"Parameter verification failed.","errors":{"vmid":"value must have a minimum value of 100"}}`, nil},
		{"lock timeout", "POST", "/nodes/pve/qemu/100/clone", 500,
			`{"data":null,"message":"can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"}`, nil},
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

// TestReturnsCoverEveryMethod makes sure no method was lost between the
// parameter table and the return schemas.
func TestReturnsCoverEveryMethod(t *testing.T) {
	c := loadReal(t)
	for key := range c.Table().Methods {
		if _, ok := c.returns[key]; !ok {
			t.Errorf("%s: no return schema entry", key)
		}
	}
	if got, want := len(c.returns), len(c.Table().Methods); got != want {
		t.Errorf("return schemas: got %d want %d", got, want)
	}
}
