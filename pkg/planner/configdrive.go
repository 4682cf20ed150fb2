package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pvectl/pvectl/pkg/planner/internal/engine"

	"github.com/pvectl/pvectl/pkg/cidata"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/spec"
)

// configDriveKind manages ConfigDriveISO: an image pvectl builds (Load
// named it <name>-<hash>.iso in Params["filename"]) and uploads to an ISO
// storage. Every file <name>-<12 hex>.iso on that storage is a version of
// the drive: the one the spec builds is uploaded when missing, and the
// others are removed once no VM has them on a drive any more: after the
// VMs that depend on the drive were re-pointed (lateRemover), and never
// while a VM still has one (PVE would delete it from under the VM).
type configDriveKind struct{}

// Traits: a config drive is a volume uploaded to a node's storage.
func (configDriveKind) Traits() engine.KindTraits { return engine.KindTraits{Scope: engine.ScopeNode} }

// driveLive is what observe found beside the versions' listing.
type driveLive struct {
	Versions []pve.Volume
	// Users are the vmids per volume of every VM's drives, read only when
	// there are versions other than the spec's.
	Users map[string][]int
}

// driveState is what a config drive's change carries to apply.
type driveState struct {
	// Upload: the spec's version is missing (or not the built image).
	Upload bool `json:"upload,omitempty"`
	// Stale are the old versions to remove after the dependents.
	Stale []string `json:"stale,omitempty"`
	// Versions are all versions found (what a delete removes).
	Versions []string `json:"versions,omitempty"`
}

func driveStateOf(c *engine.Change) *driveState { return engine.EnsureState[driveState](c) }

func (configDriveKind) NewState(lo *engine.LiveObj) any {
	st := &driveState{}
	if dl, ok := lo.State.(*driveLive); ok {
		for _, v := range dl.Versions {
			st.Versions = append(st.Versions, v.VolID)
		}
	}
	return st
}

func (configDriveKind) DecodeState(raw json.RawMessage) (any, error) {
	st := &driveState{}
	return st, json.Unmarshal(raw, st)
}

// driveVolid is the volume of the spec's version.
func driveVolid(r *spec.Resource) string {
	return r.Params.Get("storage") + ":iso/" + r.Params.Get("filename")
}

// driveObj finds the versions of r's drive among an ISO listing.
func driveObj(node string, r *spec.Resource, vs []pve.Volume) *engine.LiveObj {
	dl := &driveLive{}
	var fields []string
	for _, v := range vs {
		file := strings.TrimPrefix(v.Name(), "iso/")
		if _, ok := cidata.ParseVolumeName(r.Name, file); ok {
			dl.Versions = append(dl.Versions, v)
			fields = append(fields, file+"="+strconv.FormatInt(v.Size, 10))
		}
	}
	slices.Sort(fields)
	cfg := pve.ConfigOf(map[string]string{"versions": strings.Join(fields, ",")})
	return &engine.LiveObj{Exists: len(dl.Versions) > 0, Node: node, Config: cfg, Digest: engine.FieldsDigest(cfg), State: dl}
}

func (configDriveKind) Observe(ctx context.Context, lc *engine.LiveConn, r *spec.Resource) (*engine.LiveObj, error) {
	node, err := lc.Node(r)
	if err != nil {
		return nil, err
	}
	vs, err := lc.StorageVolumes(ctx, node, r.Params.Get("storage"), "iso")
	if err != nil {
		return nil, err
	}
	lo := driveObj(node, r, vs)
	dl := lo.State.(*driveLive)
	// Which VMs use which version matters only for a drive that stays
	// and has old versions (a removal re-reads it at apply time anyway).
	if r.State == spec.Present && slices.ContainsFunc(dl.Versions, func(v pve.Volume) bool { return v.VolID != driveVolid(r) }) {
		if dl.Users, err = lc.VolumeUsers(ctx); err != nil {
			return nil, err
		}
	}
	return lo, nil
}

func (k configDriveKind) Compare(b *engine.Builder, r *spec.Resource, lo *engine.LiveObj, c *engine.Change) error {
	dl, _ := lo.State.(*driveLive)
	st := driveStateOf(c)
	img, name, err := spec.ConfigDriveImage(r)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Address(), err)
	}
	want := driveVolid(r)
	var cur *pve.Volume
	var others []pve.Volume
	for i, v := range dl.Versions {
		if v.VolID == want {
			cur = &dl.Versions[i]
		} else {
			others = append(others, v)
		}
	}
	rememberDrive(b.Opts.DriveCache, r, name)
	switch {
	case cur == nil:
		st.Upload = true
		before := any(nil)
		if len(others) > 0 {
			old := fileOf(others[len(others)-1].VolID)
			before = old
			diff, why := driveContentDiff(b.Opts.DriveCache, r, old)
			c.Diff = append(c.Diff, diff...)
			if why != "" {
				c.Reasons = append(c.Reasons, why)
			}
		}
		c.Diff = append(c.Diff, engine.FieldDiff{Path: "filename", Before: before, After: name})
		c.Reasons = append(c.Reasons, "new version "+name)
	case cur.Size != int64(len(img)):
		// Not the image the name promises (a file put there by hand):
		// PVE overwrites it on upload.
		st.Upload = true
		c.Diff = append(c.Diff, engine.FieldDiff{Path: "size", Before: cur.Size, After: len(img)})
		c.Reasons = append(c.Reasons, fmt.Sprintf("%s is not the image pvectl builds (size %d, want %d): uploaded again", name, cur.Size, len(img)))
	}
	for _, v := range others {
		if users := driveBlockers(b, r, v.VolID, dl.Users); len(users) > 0 {
			c.Reasons = append(c.Reasons, fmt.Sprintf("old version %s kept: in use by %s", fileOf(v.VolID), strings.Join(users, ", ")))
			continue
		}
		st.Stale = append(st.Stale, v.VolID)
		c.Diff = append(c.Diff, engine.FieldDiff{Path: "versions", Before: fileOf(v.VolID), After: nil})
		c.Reasons = append(c.Reasons, fmt.Sprintf("old version %s removed once no VM uses it", fileOf(v.VolID)))
	}
	c.Action = engine.NoOp
	if st.Upload || len(st.Stale) > 0 {
		c.Action = engine.Update
	}
	return nil
}

// CheckCreate remembers what the plan shows of the first version, for
// the diff of the next (drivecache.go).
func (configDriveKind) CheckCreate(b *engine.Builder, r *spec.Resource, _ *engine.LiveObj, _ *engine.Change) error {
	rememberDrive(b.Opts.DriveCache, r, r.Params.Get("filename"))
	return nil
}

func fileOf(volid string) string { return volid[strings.LastIndexByte(volid, '/')+1:] }

// driveBlockers names the VMs that will still have volid on a drive after
// this plan: VMs outside the specs (or only read by them), and VMs of the
// specs that want it or keep it on a drive the spec does not set. A VM of
// the specs that gives that drive another volume (the config drive's new
// version) or that goes away does not keep it.
func driveBlockers(b *engine.Builder, r *spec.Resource, volid string, users map[string][]int) []string {
	var out []string
	for _, vmid := range users[volid] {
		owner := specGuestOf(b, r.Connection, vmid)
		if owner != nil && owner.State != spec.Present && !owner.ReadOnly {
			continue // deleted by this plan
		}
		if owner == nil || owner.ReadOnly || keepsVolume(b, owner, volid) {
			out = append(out, fmt.Sprintf("VM %d", vmid))
		}
	}
	return out
}

// guestOf finds the resource of the specs that manages the guest vmid.
func specGuestOf(b *engine.Builder, conn string, vmid int) *spec.Resource {
	for _, o := range b.Set.Resources {
		if o.Connection != conn {
			continue
		}
		lo := b.Obs.Objs[o.Address()]
		if lo == nil || !lo.Exists {
			continue
		}
		if gl, ok := lo.State.(*guestLive); ok && gl.VMID == vmid {
			return o
		}
	}
	return nil
}

// keepsVolume reports whether o has volid on a drive after its change:
// a live drive with it that the spec does not give another value, or a
// desired drive with it.
func keepsVolume(b *engine.Builder, o *spec.Resource, volid string) bool {
	for k, v := range o.Params.All() {
		if engine.DriveKey.MatchString(k) && driveVolume(v) == volid {
			return true
		}
	}
	lo := b.Obs.Objs[o.Address()]
	for k, v := range lo.Config.All() {
		if !engine.DriveKey.MatchString(k) || driveVolume(v) != volid {
			continue
		}
		if want, set := o.Params.Lookup(k); !set || driveVolume(want) == volid {
			return true
		}
	}
	return false
}

func (k configDriveKind) Create(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	return k.upload(ctx, x, c)
}

func (k configDriveKind) Update(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	if !driveStateOf(c).Upload {
		return nil // only old versions go, after the dependents
	}
	return k.upload(ctx, x, c)
}

// upload builds the image again (the same keys give the same bytes) and
// sends it under the name the plan has.
func (configDriveKind) upload(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	r := c.Resource
	img, name, err := spec.ConfigDriveImage(r)
	if err != nil {
		return fmt.Errorf("build %s: %w", r.Address(), err)
	}
	if name != r.Params.Get("filename") {
		return fmt.Errorf("the image builds as %s, but the plan has %s (another pvectl version made the plan?): run plan again", name, r.Params.Get("filename"))
	}
	x.Msg("uploading %s (%d bytes) to %s on node %s", name, len(img), r.Params.Get("storage"), c.Node)
	if err := x.Client.Upload(ctx, c.Node, r.Params.Get("storage"), pve.UploadFile{Content: "iso", Filename: name, Data: img}); err != nil {
		return fmt.Errorf("upload %s: %w", name, err)
	}
	return nil
}

func (configDriveKind) RemovesLate(c *engine.Change) bool {
	return (c.Action == engine.Update || c.Action == engine.Create) && len(driveStateOf(c).Stale) > 0
}

// RemoveLate removes the old versions that no VM has on a drive now that
// the dependents are done; one still in use is kept and said so.
func (k configDriveKind) RemoveLate(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	return k.removeVersions(ctx, x, c, driveStateOf(c).Stale, false)
}

// Remove deletes every version of the drive; one a VM still has on a
// drive is an error (PVE would delete it from under the VM).
func (k configDriveKind) Remove(ctx context.Context, x *engine.Execution, c *engine.Change) error {
	return k.removeVersions(ctx, x, c, driveStateOf(c).Versions, true)
}

func (configDriveKind) removeVersions(ctx context.Context, x *engine.Execution, c *engine.Change, volids []string, strict bool) error {
	if len(volids) == 0 {
		return nil
	}
	rows, err := x.Client.ClusterResources(ctx, "vm")
	if err != nil {
		return fmt.Errorf("list VMs: %w", err)
	}
	users, err := engine.VolumeUsers(ctx, x.Client, rows)
	if err != nil {
		return err
	}
	storage := c.Resource.Params.Get("storage")
	for _, v := range volids {
		if ids := users[v]; len(ids) > 0 {
			vms := make([]string, len(ids))
			for i, id := range ids {
				vms[i] = strconv.Itoa(id)
			}
			if strict {
				return fmt.Errorf("%s is on a drive of VM %s: detach it there first", v, strings.Join(vms, ", "))
			}
			x.Msg("kept %s: on a drive of VM %s", v, strings.Join(vms, ", "))
			continue
		}
		x.Msg("removing %s", v)
		if err := x.Client.DeleteVolume(ctx, c.Node, storage, v); err != nil && !pve.IsNotFound(err) {
			return fmt.Errorf("delete %s: %w", v, err)
		}
	}
	return nil
}

func (configDriveKind) Current(ctx context.Context, cl *pve.Client, c *engine.Change) (*engine.LiveObj, error) {
	vs, err := cl.StorageContent(ctx, c.Node, c.Resource.Params.Get("storage"), "iso")
	if err != nil && !pve.IsNotFound(err) { // a storage the plan makes
		return nil, err
	}
	return driveObj(c.Node, c.Resource, vs), nil
}

// driveVolume is the volume of a drive value ("local:iso/x.iso,media=cdrom").
func driveVolume(v string) string {
	vol, _, _ := strings.Cut(v, ",")
	return strings.TrimPrefix(vol, "file=")
}
