package planner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/schema"
	"github.com/pvectl/pvectl/pkg/spec"
)

// Snapshots before risky changes (`apply --snapshot`, a guest's
// `snapshotBeforeChange: true`): right before a change that touches a
// guest's disks or reboots it, apply takes a PVE snapshot named
// pvectl-<time>, keeps the newest ApplyOptions.KeepSnapshots of them, and
// when the change fails says how to roll back (or rolls back, with
// RollbackOnFailure). The plan says which guests get one, and names those
// whose volumes cannot be snapshotted.

// SnapshotPrefix starts the name of every snapshot pvectl takes; the
// others are never pruned.
const SnapshotPrefix = "pvectl-"

// DefaultKeepSnapshots is how many of its snapshots pvectl keeps per guest.
const DefaultKeepSnapshots = 3

// snapshotKind kinds are guests: snapshotRisk says why a change of
// theirs deserves a snapshot ("" when it does not), unsnapshottable which
// volume of theirs PVE could not snapshot.
type snapshotKind interface {
	snapshotRisk(c *engine.Change) (pve.GuestType, string)
	unsnapshottable(conf *pve.Config, types map[string]string) string
}

func (g guest) snapshotRisk(c *engine.Change) (pve.GuestType, string) {
	st := stateOf(c)
	if c.Action != engine.Update || st.VMID == 0 {
		return g.typ, ""
	}
	var disks []string
	for _, d := range c.Diff {
		key, _, _ := strings.Cut(d.Path, ".")
		if g.isVolumeKey(key) && !slices.Contains(disks, key) {
			disks = append(disks, key)
		}
	}
	switch {
	case len(disks) > 0:
		return g.typ, "it changes " + strings.Join(disks, ", ")
	case st.Reboot:
		return g.typ, "it reboots the guest"
	}
	return g.typ, ""
}

// planSnapshots marks the changes that take a snapshot first.
func planSnapshots(ctx context.Context, b *engine.Builder) error {
	for _, addr := range slices.Sorted(maps.Keys(b.Changes)) {
		c := b.Changes[addr]
		r := c.Resource
		sk, ok := engine.Kinds[r.Kind].(snapshotKind)
		if !ok || !(b.Opts.Snapshot || wantsSnapshot(r)) || b.Failed[addr] != nil {
			continue
		}
		typ, why := sk.snapshotRisk(c)
		if why == "" {
			continue
		}
		st := stateOf(c)
		if len(moves(c)) > 0 {
			c.Reasons = append(c.Reasons, "no snapshot first: it moves a volume to another storage, which a snapshot of the volume would hold back")
			continue
		}
		if st.PrevNode != "" && st.PrevNode != c.Node {
			c.Reasons = append(c.Reasons, "no snapshot first: it migrates the guest, and PVE does not move a guest with snapshots of local volumes")
			continue
		}
		lo := b.Obs.Objs[addr]
		lc := b.Obs.Conns[r.Connection]
		if lo == nil || lc == nil {
			continue
		}
		storages, err := lc.StorageList(ctx)
		if err != nil {
			return fmt.Errorf("%s: read the storages to plan its snapshot: %w", addr, err)
		}
		if bad := sk.unsnapshottable(lo.Config, storageTypes(storages)); bad != "" {
			c.Reasons = append(c.Reasons, "no snapshot first ("+why+"): "+bad)
			continue
		}
		c.Snapshot = &engine.SnapshotStep{Type: typ, VMID: st.VMID, Node: c.Node, Why: why}
		c.Reasons = append(c.Reasons, fmt.Sprintf("takes a snapshot %s<time> of %s %d first (%s)", SnapshotPrefix, typ, st.VMID, why))
	}
	return nil
}

func wantsSnapshot(r *spec.Resource) bool {
	g := spec.Guest(r)
	return g.SnapshotBeforeChange != nil && *g.SnapshotBeforeChange
}

func storageTypes(rows []*pve.Config) map[string]string {
	out := map[string]string{}
	for _, row := range rows {
		out[row.Get("storage")] = row.Get("type")
	}
	return out
}

// unsnapshottable names the first volume of a guest's config that PVE
// could not snapshot ("" when all can), as qemu-server's and
// pve-container's has_feature('snapshot') ask pve-storage's
// volume_has_feature: CD-ROMs are skipped (QemuConfig.pm has_feature);
// LVM-thin, ZFS and RBD volumes can; directory-like storages and thick
// LVM only qcow2 (src/PVE/Storage/Plugin.pm, LVMPlugin.pm), BTRFS raw and
// qcow2 too (BTRFSPlugin.pm); a base volume or a path never.
func (g guest) unsnapshottable(conf *pve.Config, types map[string]string) string {
	keys := conf.Keys()
	for _, key := range keys {
		if !g.isVolumeKey(key) {
			continue
		}
		items, _ := schema.SplitPropertyString(conf.Get(key))
		if media, _ := schema.PropValue(items, "media"); media == "cdrom" {
			continue
		}
		volid := strings.TrimPrefix(strings.SplitN(conf.Get(key), ",", 2)[0], "file=")
		if volid == "none" {
			continue
		}
		if why := volumeSnapshotRefusal(volid, conf.Get(key), types); why != "" {
			return fmt.Sprintf("%s (%s) %s", key, volid, why)
		}
	}
	return ""
}

func volumeSnapshotRefusal(volid, drive string, types map[string]string) string {
	sid, name, ok := strings.Cut(volid, ":")
	if !ok {
		return "is a path, not a storage volume: PVE cannot snapshot it"
	}
	st := types[sid]
	if strings.HasPrefix(path.Base(name), "base-") {
		return "is a template's base volume"
	}
	format := "raw"
	if strings.HasSuffix(name, ".qcow2") || strings.Contains(drive, "format=qcow2") {
		format = "qcow2"
	} else if strings.HasPrefix(path.Base(name), "subvol-") {
		format = "subvol"
	}
	switch st {
	case "lvmthin", "zfspool", "rbd":
		return ""
	case "btrfs":
		return ""
	case "dir", "nfs", "cifs", "glusterfs", "cephfs", "lvm":
		if format == "qcow2" {
			return ""
		}
		return fmt.Sprintf("is %s on storage %s (%s), which snapshots only qcow2", format, sid, st)
	}
	if st == "" {
		return fmt.Sprintf("is on storage %s, which the cluster does not list", sid)
	}
	return fmt.Sprintf("is on storage %s (%s), which cannot snapshot", sid, st)
}

// snapshotName is the name of a snapshot taken at t.
func snapshotName(t time.Time) string {
	return SnapshotPrefix + t.UTC().Format("20060102-150405")
}

// freeSnapshotName is snapshotName(t), with -2, -3 … when the guest has
// one of that name already (two applies within a second).
func freeSnapshotName(ctx context.Context, cl *pve.Client, s *engine.SnapshotStep, t time.Time) (string, error) {
	snaps, err := cl.Snapshots(ctx, s.Type, s.Node, s.VMID)
	if err != nil {
		return "", fmt.Errorf("list the snapshots of %s %d: %w", s.Type, s.VMID, err)
	}
	taken := map[string]bool{}
	for _, sn := range snaps {
		taken[sn.Name] = true
	}
	base := snapshotName(t)
	name := base
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	return name, nil
}

// withSnapshot runs apply for a change, taking its snapshot first when
// the plan asks for one; after a failure it says how to roll back, or
// rolls back with opts.RollbackOnFailure.
func withSnapshot(ctx context.Context, clients engine.Clients, x *engine.Execution, opts engine.ApplyOptions, apply func() error) error {
	c := x.Change
	s := c.Snapshot
	if s == nil || c.Resource == nil {
		return apply()
	}
	cl, err := clients.Client(c.Resource.Connection)
	if err != nil {
		return err
	}
	name, err := freeSnapshotName(ctx, cl, s, time.Now())
	if err != nil {
		return err
	}
	x.Msg("taking snapshot %s of %s %d before the change (%s)", name, s.Type, s.VMID, s.Why)
	before, err := cl.GuestConfig(ctx, s.Type, s.Node, s.VMID)
	if err != nil {
		return fmt.Errorf("read %s %d before its snapshot: %w", s.Type, s.VMID, err)
	}
	if err := takeSnapshot(ctx, cl, s, name); err != nil {
		return fmt.Errorf("snapshot %s of %s %d before the change (nothing was changed): %w", name, s.Type, s.VMID, err)
	}
	if err := followSnapshotDigest(ctx, cl, c, s, before); err != nil {
		return err
	}
	err = apply()
	if err != nil {
		return rollbackAfter(ctx, cl, x, s, name, opts.RollbackOnFailure, err)
	}
	keep := opts.KeepSnapshots
	if keep <= 0 {
		keep = DefaultKeepSnapshots
	}
	if perr := pruneSnapshots(ctx, cl, s, keep); perr != nil {
		x.Msg("the change is done; pruning old %s snapshots failed: %v", SnapshotPrefix, perr)
	}
	return nil
}

// takeSnapshot creates the snapshot once: an answer that does not prove
// PVE refused it is settled by reading the guest's snapshots.
func takeSnapshot(ctx context.Context, cl *pve.Client, s *engine.SnapshotStep, name string) error {
	err := cl.CreateSnapshot(ctx, s.Type, s.Node, s.VMID, name, "taken by pvectl before a change ("+s.Why+")")
	if err == nil || !pve.OutcomeUnknown(err) {
		return err
	}
	snaps, lerr := cl.Snapshots(ctx, s.Type, s.Node, s.VMID)
	if lerr == nil && slices.ContainsFunc(snaps, func(sn pve.Snapshot) bool { return sn.Name == name }) {
		return nil
	}
	return err
}

// rollbackAfter reports a failed change with the way back to the
// snapshot taken before it, or takes it with rollback.
func rollbackAfter(ctx context.Context, cl *pve.Client, x *engine.Execution, s *engine.SnapshotStep, name string, rollback bool, cause error) error {
	tool := "qm"
	if s.Type == pve.LXC {
		tool = "pct"
	}
	cmd := fmt.Sprintf("%s rollback %d %s (on node %s)", tool, s.VMID, name, s.Node)
	if !rollback {
		return fmt.Errorf("%w; %s %d has snapshot %s from right before the change: roll back with `%s`", cause, s.Type, s.VMID, name, cmd)
	}
	x.Msg("rolling %s %d back to %s (--rollback-on-failure)", s.Type, s.VMID, name)
	if err := cl.RollbackSnapshot(ctx, s.Type, s.Node, s.VMID, name); err != nil {
		return fmt.Errorf("%w; the rollback to %s failed too (%v): roll back with `%s`", cause, name, err, cmd)
	}
	return fmt.Errorf("%w; %s %d was rolled back to snapshot %s", cause, s.Type, s.VMID, name)
}

// pruneSnapshots deletes the guest's pvectl snapshots but the newest keep.
func pruneSnapshots(ctx context.Context, cl *pve.Client, s *engine.SnapshotStep, keep int) error {
	snaps, err := cl.Snapshots(ctx, s.Type, s.Node, s.VMID)
	if err != nil {
		return err
	}
	var ours []pve.Snapshot
	for _, sn := range snaps {
		if strings.HasPrefix(sn.Name, SnapshotPrefix) {
			ours = append(ours, sn)
		}
	}
	sort.SliceStable(ours, func(i, j int) bool {
		if ours[i].SnapTime != ours[j].SnapTime {
			return ours[i].SnapTime < ours[j].SnapTime
		}
		return ours[i].Name < ours[j].Name
	})
	var errs []error
	for len(ours) > keep {
		if err := cl.DeleteSnapshot(ctx, s.Type, s.Node, s.VMID, ours[0].Name); err != nil {
			errs = append(errs, err)
		}
		ours = ours[1:]
	}
	return errors.Join(errs...)
}

// followSnapshotDigest: a snapshot is a section of the guest's config
// file, which the digest covers (pve-guest-common AbstractConfig.pm
// snapshot_create writes it; qemu-server's digest is over the whole
// file), so the plan's digest no longer matches. When the config read
// right before the snapshot still had the plan's digest, and the one
// after differs from it only by the snapshot's bookkeeping (parent), the
// change goes on with the new digest: a hand edit between plan and apply
// is still refused.
func followSnapshotDigest(ctx context.Context, cl *pve.Client, c *engine.Change, s *engine.SnapshotStep, before *pve.Config) error {
	if c.Digest == "" || before.Get("digest") != c.Digest {
		return nil // changed since the plan: the change's own write is refused, as without a snapshot
	}
	after, err := cl.GuestConfig(ctx, s.Type, s.Node, s.VMID)
	if err != nil {
		return fmt.Errorf("read %s %d after its snapshot: %w", s.Type, s.VMID, err)
	}
	strip := func(cfg *pve.Config) *pve.Config {
		out := cfg.Clone()
		out.Delete("digest")
		out.Delete("parent")
		return out
	}
	if strip(before).Equal(strip(after)) {
		c.Digest = after.Get("digest")
	}
	return nil
}
