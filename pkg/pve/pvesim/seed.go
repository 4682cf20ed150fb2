package pvesim

import (
	"fmt"
	"time"
)

const (
	gib = int64(1) << 30
	mib = int64(1) << 20

	debianTemplate = "vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	cloudTemplate  = 9000
)

// seed builds the default cluster of design §6: nodes, local and local-lvm,
// vmbr0 on eno1 with free NICs, and a cloud-init template VM 9000.
func (s *Server) seed() *state {
	now := time.Now().Unix()
	st := &state{
		Version: stateVersion,
		Nodes:   append([]string(nil), s.opts.Nodes...),
		VMs:     map[int]*vm{},
		Storages: map[string]*storage{
			"local": {ID: "local", Type: "dir", Path: "/var/lib/vz",
				Content: []string{"iso", "vztmpl", "backup", "import", "snippets"}, Total: 100 * gib},
			"local-lvm": {ID: "local-lvm", Type: "lvmthin", VGName: "pve", ThinPool: "data",
				Content: []string{"images", "rootdir"}, Total: 400 * gib},
		},
		Volumes: map[string]*volume{},
		Pools:   map[string]*pool{},
		Net:     map[string]*nodeNet{},
		DNS:     map[string]*dnsConf{},
		Boot:    map[string]int64{},
		Access:  seedAccess(),
	}
	for _, n := range st.Nodes {
		st.Net[n] = seedNetwork()
		st.DNS[n] = &dnsConf{Search: "local", DNS1: "192.168.100.1"}
		st.Boot[n] = now - 86400
	}
	s.st = st
	ctime := now - 7*86400
	st.addVolume(&volume{Storage: "local", Name: debianTemplate, Content: "vztmpl", Format: "tzst", Size: 126 * mib, Ctime: ctime})
	st.addVolume(&volume{Storage: "local-lvm", Name: fmt.Sprintf("base-%d-disk-0", cloudTemplate), Content: "images",
		Format: "raw", Size: 3584 * mib, VMID: cloudTemplate, Ctime: ctime})
	st.addVolume(&volume{Storage: "local-lvm", Name: fmt.Sprintf("vm-%d-cloudinit", cloudTemplate), Content: "images",
		Format: "raw", Size: 4 * mib, VMID: cloudTemplate, Ctime: ctime})
	st.VMs[cloudTemplate] = &vm{VMID: cloudTemplate, Node: st.Nodes[0], Conf: map[string]string{
		"name":     "ubuntu-24.04-cloud",
		"template": "1",
		"scsi0":    fmt.Sprintf("local-lvm:base-%d-disk-0,size=3584M", cloudTemplate),
		"ide2":     fmt.Sprintf("local-lvm:vm-%d-cloudinit,media=cdrom", cloudTemplate),
		"net0":     "virtio=" + s.newMAC() + ",bridge=vmbr0",
		"serial0":  "socket",
		"vga":      "serial0",
		"agent":    "1",
		"boot":     "order=scsi0",
		"ostype":   "l26",
		"scsihw":   "virtio-scsi-pci",
		"memory":   "2048",
		"cores":    "2",
		"smbios1":  "uuid=" + s.newUUID(),
		"vmgenid":  s.newUUID(),
		"meta":     fmt.Sprintf("creation-qemu=9.2.0,ctime=%d", ctime),
	}}
	return st
}

func seedNetwork() *nodeNet {
	running := map[string]*iface{
		"lo":   {Name: "lo", Type: "loopback", Method: "loopback", Autostart: true},
		"eno1": {Name: "eno1", Type: "eth", Method: "manual", Exists: true},
		"vmbr0": {Name: "vmbr0", Type: "bridge", Method: "static", Autostart: true,
			CIDR: "192.168.100.2/24", Gateway: "192.168.100.1", BridgePorts: "eno1", BridgeSTP: "off", BridgeFD: "0"},
	}
	for _, n := range []string{"eno2", "eno3", "eno4"} {
		running[n] = &iface{Name: n, Type: "eth", Method: "manual", Exists: true}
	}
	reread(running)
	return &nodeNet{Running: running}
}

func (st *state) addVolume(v *volume) { st.Volumes[v.volid()] = v }

// newMAC returns a unique MAC with the datacenter's mac_prefix (BC:24:11,
// Proxmox's OUI, unless datacenter.cfg sets another), as qemu-server
// PVE/QemuServer/Network.pm parse_net and pve-container
// src/PVE/LXC/Config.pm parse_lxc_network
// draw one for a NIC written without (pve-common Tools.pm
// random_ether_addr($dc->{mac_prefix})). Called with s.mu held.
func (s *Server) newMAC() string {
	// The MACs in use are collected once (under s.mu), then each new one
	// is added: scanning every guest per new NIC made creating thousands
	// of guests quadratic. PVE itself draws a random address and checks
	// nothing (pve-common Tools.pm random_ether_addr); the simulator keeps
	// its own addresses distinct, which a MAC written by hand later could
	// still collide with, as on PVE.
	if s.macs == nil {
		s.macs = map[string]bool{}
		if s.st != nil {
			for _, v := range s.st.VMs {
				k := s.kindOf(v)
				for key, val := range v.Conf {
					if isNetKey(key) {
						if mac := k.mac(val); mac != "" {
							s.macs[mac] = true
						}
					}
				}
			}
		}
	}
	prefix := proxmoxOUI
	if s.st != nil {
		prefix = s.macPrefix()
	}
	for range 1000 {
		var b [6]byte
		for i := range b {
			b[i] = byte(s.rng.IntN(256))
		}
		mac := prefixedMAC(prefix, b)
		if !s.macs[mac] {
			s.macs[mac] = true
			return mac
		}
	}
	panic("pvesim: MAC space exhausted")
}

func (s *Server) newUUID() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(s.rng.IntN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
