package planner

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// A disk imported from an image at a size of the spec's
// ("local-lvm:20,import-from=local:import/noble.qcow2", what guides and the
// Terraform provider write) is what PVE refuses: qemu-server's create
// (API2/Qemu.pm, create_disks) takes only "STORAGE:0,import-from=SOURCE"
// and makes the disk the image's size ("'import-from' requires special
// syntax - use <storage ID>:0,import-from=<source>"). pvectl creates it that
// way and then grows it to the spec's size with PUT …/resize: one apply.
// The next plan compares the spec's size with the disk's, as for any disk.

// importGrow is one disk a create imports and then grows.
type importGrow struct {
	key, source string
	size        string // the size to grow to, "20G"
}

// importGrows rewrites params' imported disks with a size to the form PVE
// takes ("STORAGE:0,import-from=…") and returns what to grow after the
// create, in key order.
func importGrows(params url.Values) []importGrow {
	var out []importGrow
	for _, key := range slices.Sorted(maps.Keys(params)) {
		val := params.Get(key)
		first, rest, _ := strings.Cut(val, ",")
		stor, size, ok := strings.Cut(first, ":")
		if !ok || strings.Contains(first, "=") || !strings.Contains(rest, "import-from=") {
			continue
		}
		items, err := schema.SplitPropertyString(rest)
		if err != nil {
			continue // validate reported it
		}
		src, importing := schema.PropValue(items, "import-from")
		gb, err := strconv.ParseFloat(size, 64)
		if !importing || err != nil || gb <= 0 {
			continue
		}
		params.Set(key, stor+":0,"+rest)
		out = append(out, importGrow{key: key, source: src, size: size + "G"})
	}
	return out
}

// importGrowReasons are the plan's lines for a create's imported disks.
func importGrowReasons(params map[string]string) []string {
	v := url.Values{}
	for k, val := range params {
		v.Set(k, val)
	}
	var out []string
	for _, g := range importGrows(v) {
		out = append(out, fmt.Sprintf("%s: imported from %s at the image's size, then grown to %s (PVE imports only as STORAGE:0)", g.key, g.source, g.size))
	}
	return out
}

// growImported grows the disks a create imported to the spec's sizes. An
// image larger than the spec's size is PVE's refusal to shrink, named.
func growImported(ctx context.Context, x *engine.Execution, node string, vmid int, grows []importGrow) error {
	for _, g := range grows {
		x.Msg("growing %s of vm %d to %s", g.key, vmid, g.size)
		if err := x.Client.ResizeGuest(ctx, pve.QEMU, node, vmid, g.key, g.size); err != nil {
			return fmt.Errorf("vm %d was created with %s imported from %s; growing it to %s failed (is the image larger? write the image's size or more): %w", vmid, g.key, g.source, g.size, err)
		}
	}
	return nil
}
