package pve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
)

// Volume is one row of GET /nodes/{node}/storage/{storage}/content.
type Volume struct {
	VolID   string `json:"volid"`
	Content string `json:"content,omitempty"`
	Format  string `json:"format,omitempty"`
	Size    int64  `json:"size,omitempty"`
	Ctime   int64  `json:"ctime,omitempty"`
	VMID    int    `json:"vmid,omitempty"`
}

// UnmarshalJSON takes the numbers as numbers or numeric strings.
func (v *Volume) UnmarshalJSON(b []byte) error {
	type plain Volume
	aux := struct {
		*plain
		Size  flexInt `json:"size"`
		Ctime flexInt `json:"ctime"`
		VMID  flexInt `json:"vmid"`
	}{plain: (*plain)(v)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	v.Size, v.Ctime, v.VMID = int64(aux.Size), int64(aux.Ctime), int(aux.VMID)
	return nil
}

// Name is the volume's name without its storage ("iso/seed.iso").
func (v Volume) Name() string {
	_, name, _ := strings.Cut(v.VolID, ":")
	return name
}

func storagePath(node, storage string, rest ...string) string {
	return apiPath(append([]string{"nodes", node, "storage", storage}, rest...)...)
}

// StorageContent lists a storage's volumes as node sees them, only those of
// content when it is not "".
func (c *Client) StorageContent(ctx context.Context, node, storage, content string) ([]Volume, error) {
	var params url.Values
	if content != "" {
		params = url.Values{"content": {content}}
	}
	var out []Volume
	if err := c.Do(ctx, http.MethodGet, storagePath(node, storage, "content"), params, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// DownloadURL is POST …/download-url (url, content, filename, checksum…):
// the node fetches the file in a task, which this waits for.
func (c *Client) DownloadURL(ctx context.Context, node, storage string, params url.Values) error {
	return c.downloadURL(ctx, node, storagePath(node, storage, "download-url"), params)
}

// DeleteVolume is DELETE …/content/{volume} (a full volid or a name on
// storage); PVE removes the file in a task, which this waits for.
func (c *Client) DeleteVolume(ctx context.Context, node, storage, volume string) error {
	return c.RunTask(ctx, http.MethodDelete, storagePath(node, storage, "content", volume), nil)
}

// UploadFile is one file for POST …/upload.
type UploadFile struct {
	Content  string // iso | vztmpl | import
	Filename string // the name PVE stores it under (normalised by PVE)
	Data     []byte
}

// Upload sends f to POST …/upload and waits for the task that copies it
// into place. The multipart body is laid out as pveproxy reads it: it
// parses the fields content, checksum-algorithm and checksum, in that
// order, before the file part, which must be named "filename", and it
// refuses chunked bodies (pve-http-server src/PVE/APIServer/AnyEvent.pm,
// file_upload_multipart). The body has an explicit Content-Length, carries
// the file's SHA-256 for PVE to verify, and is sent once with the upload
// deadline (WithUploadTimeout). PVE overwrites a file of that name
// (pve-storage src/PVE/API2/Storage/Status.pm, upload).
func (c *Client) Upload(ctx context.Context, node, storage string, f UploadFile) error {
	if f.Content == "" || f.Filename == "" {
		return errors.New("upload: content and file name are required")
	}
	sum := sha256.Sum256(f.Data)
	fields := [][2]string{
		{"content", f.Content},
		{"checksum-algorithm", "sha256"},
		{"checksum", hex.EncodeToString(sum[:])},
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	shown := url.Values{}
	for _, kv := range fields {
		if err := mw.WriteField(kv[0], kv[1]); err != nil {
			return fmt.Errorf("upload %s: %w", f.Filename, err)
		}
		shown.Set(kv[0], kv[1])
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="filename"; filename="%s"`, quoteFilename(f.Filename)))
	h.Set("Content-Type", "application/octet-stream")
	part, err := mw.CreatePart(h)
	if err == nil {
		_, err = part.Write(f.Data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return fmt.Errorf("upload %s: %w", f.Filename, err)
	}
	shown.Set("filename", f.Filename)
	path := storagePath(node, storage, "upload")
	raw := &rawBody{contentType: mw.FormDataContentType(), data: body.Bytes(),
		note: fmt.Sprintf("(multipart: the fields above, then the file, %d bytes)", len(f.Data))}
	sent := c.serverNow()
	resp, err := c.doOnce(ctx, http.MethodPost, path, shown, raw)
	if err != nil {
		if OutcomeUnknown(err) && ctx.Err() == nil {
			// Its task may run: whoever reads the file back next must
			// see what it did (downloadretry.go settleTasks).
			c.settleTasks(ctx, node, "imgcopy", "", sent)
		}
		return err
	}
	upid, err := taskID(http.MethodPost, path, resp)
	if err != nil || upid.IsZero() {
		return err
	}
	_, err = c.WaitTask(ctx, upid)
	return err
}

// quoteFilename escapes what would end the quoted filename="…" early.
func quoteFilename(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\r", "", "\n", "").Replace(s)
}
