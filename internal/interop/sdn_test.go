package interop

import (
	"testing"
	"time"

	proxmox "github.com/luthermonson/go-proxmox"

	"github.com/pvectl/pvectl/pkg/pve/pvesim"
)

// TestGoProxmoxSDN drives SDN with go-proxmox's own calls, unchanged: a
// vlan zone, a vnet and a subnet created and read back, the commit
// (SDNApply) waited for, the vnet then a bridge of the node, a VM on it
// started; the vnet updated; the subnet, vnet and zone deleted and
// committed.
func TestGoProxmoxSDN(t *testing.T) {
	ctx, c, w := goProxmox(t, pvesim.Options{TaskDuration: 10 * time.Millisecond})
	cl, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.NewSDNZone(ctx, &proxmox.SDNZoneOptions{Name: "lan", Type: "vlan", Bridge: "vmbr0", MTU: 1500}); err != nil {
		t.Fatalf("NewSDNZone: %v", err)
	}
	if err := cl.NewSDNVNet(ctx, &proxmox.VNetOptions{Name: "web", Zone: "lan", Tag: 10, Alias: "web"}); err != nil {
		t.Fatalf("NewSDNVNet: %v", err)
	}
	vnet, err := cl.SDNVNet(ctx, "web")
	if err != nil || vnet.Zone != "lan" || vnet.Tag != 10 || vnet.Type != "vnet" {
		t.Fatalf("SDNVNet: %+v, %v", vnet, err)
	}
	if err := vnet.NewSubnet(ctx, &proxmox.SDNSubnetOptions{Subnet: "10.20.0.0/24", Gateway: "10.20.0.1",
		DHCPRange: []string{"start-address=10.20.0.100,end-address=10.20.0.150"}}); err != nil {
		t.Fatalf("NewSubnet: %v", err)
	}
	subnets, err := vnet.Subnets(ctx)
	if err != nil || len(subnets) != 1 || subnets[0].ID != "lan-10.20.0.0-24" {
		t.Fatalf("Subnets: %+v, %v", subnets, err)
	}
	sub := vnet.Subnet("lan-10.20.0.0-24")
	if err := sub.Read(ctx); err != nil || sub.CIDR != "10.20.0.0/24" || sub.Gateway != "10.20.0.1" ||
		len(sub.DhcpRange) != 1 || sub.DhcpRange[0].EndAddress != "10.20.0.150" {
		t.Fatalf("Subnet.Read: %+v, %v", sub, err)
	}
	zones, err := cl.SDNZones(ctx, "vlan")
	if err != nil || len(zones) != 1 || zones[0].Name != "lan" || zones[0].MTU != 1500 {
		t.Fatalf("SDNZones: %+v, %v", zones, err)
	}

	task, err := cl.SDNApply(ctx)
	w.ok("SDNApply", task, err)
	node, err := c.Node(ctx, "pve")
	if err != nil {
		t.Fatal(err)
	}
	// reloadnetworkall does not wait for the node's own reload.
	w.until("vnet web is a bridge on pve", func() bool {
		nets, err := node.Networks(ctx, "vnet")
		return err == nil && len(nets) == 1 && nets[0].Iface == "web"
	})
	w.until("zone lan available on pve", func() bool {
		rs, err := cl.Resources(ctx)
		r := findResource(rs, "network/pve/zone/lan")
		return err == nil && r != nil && r.Status == "available"
	})
	task, err = node.NewVirtualMachine(ctx, 100, proxmox.VirtualMachineOption{Name: "net0", Value: "virtio,bridge=web"})
	w.ok("create VM", task, err)
	vm, err := node.VirtualMachine(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	task, err = vm.Start(ctx)
	w.ok("Start", task, err)

	// The library's UpdateSDNVNet sends the vnet as read, `type` and
	// `vnet` included; PVE's update schema has no `type` and refuses it
	// (400, additional property): the update goes through Client.Put.
	if err := c.Put(ctx, "/cluster/sdn/vnets/web", map[string]string{"alias": "front"}, nil); err != nil {
		t.Fatalf("update vnet: %v", err)
	}
	if vnet, err = cl.SDNVNet(ctx, "web"); err != nil || vnet.Alias != "front" {
		t.Fatalf("SDNVNet after the update: %+v, %v", vnet, err)
	}
	if err := sub.Delete(ctx); err != nil {
		t.Fatalf("Subnet.Delete: %v", err)
	}
	if err := cl.DeleteSDNVNet(ctx, "web"); err != nil {
		t.Fatalf("DeleteSDNVNet: %v", err)
	}
	if err := cl.DeleteSDNZone(ctx, "lan"); err != nil {
		t.Fatalf("DeleteSDNZone: %v", err)
	}
	task, err = cl.SDNApply(ctx)
	w.ok("SDNApply after the deletes", task, err)
	if zones, err := cl.SDNZones(ctx); err != nil || len(zones) != 0 {
		t.Errorf("SDNZones after the deletes: %+v, %v", zones, err)
	}
}
