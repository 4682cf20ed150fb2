package pve

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// A download-url whose answer does not prove PVE refused it
// (OutcomeUnknown) is looked up before it is sent again, as a guest create
// is (createretry.go): pve-storage src/PVE/API2/Storage/Status.pm
// download_url forks a "download" worker whose id is the file name
// (PVE::Tools::encode_text), so this token's download tasks of that name
// since the send are found and waited for. Sending it again while the
// first still runs would start a second download of the same file.

// downloadURL POSTs …/download-url and waits for its task.
func (c *Client) downloadURL(ctx context.Context, node, path string, params url.Values) error {
	id := encodeText(params.Get("filename"))
	request := http.MethodPost + " " + path
	var since time.Time
	for attempt := 1; ; attempt++ {
		sent := c.serverNow()
		err := c.RunTask(ctx, http.MethodPost, path, params)
		if err == nil || ctx.Err() != nil || !OutcomeUnknown(err) || id == "" {
			return err
		}
		if since.IsZero() {
			since = sent
		}
		own, lerr := c.ownTasksOf(ctx, node, "download", id, false, since)
		if lerr != nil {
			return fmt.Errorf("%w (looking for its task failed too: %v)", err, lerr)
		}
		if len(own) > 0 {
			observe(ctx, TaskEvent{Phase: TaskFound, UPID: own[0], Request: request, Attempt: attempt, Err: err})
			_, werr := c.WaitTask(ctx, own[0])
			return werr
		}
		if rerr := c.beforeResend(ctx, request, attempt, err); rerr != nil {
			return rerr
		}
	}
}

// settleTasks waits for this token's tasks of type typ and id on node
// since sent to end: an upload's task (pve-storage Status.pm upload forks
// "imgcopy" without an id, so several uploads cannot be told apart) is
// waited for before the caller reads back what a request whose answer was
// lost did. Best effort: the caller's read decides.
func (c *Client) settleTasks(ctx context.Context, node, typ, id string, sent time.Time) {
	own, err := c.ownTasksOf(ctx, node, typ, id, false, sent)
	if err != nil {
		return
	}
	for _, u := range own {
		_, _ = c.WaitTask(ctx, u)
	}
}

// encodeText is pve-common src/PVE/ParseUtils.pm encode_text (PVE::Tools
// encode_text calls it): the UTF-8 bytes that are control or high-bit
// characters, ':' or '%' as URI escapes (%XX).
func encodeText(s string) string {
	var b strings.Builder
	for _, by := range []byte(s) {
		if by < 0x20 || by > 0x7e || by == ':' || by == '%' {
			fmt.Fprintf(&b, "%%%02X", by)
			continue
		}
		b.WriteByte(by)
	}
	return b.String()
}
