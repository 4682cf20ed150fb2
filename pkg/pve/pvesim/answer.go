package pvesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// statusLine is the code and reason phrase pve-http-server writes for an
// answer whose message is msg (src/PVE/APIServer/AnyEvent.pm, response:
// the message, else the standard phrase; only its first line; a reason
// that still holds a carriage return turns the answer into a plain
// "400 Bad Request" without a body). ok is false in that last case.
func statusLine(code int, msg string) (int, string, bool) {
	if msg == "" {
		msg = http.StatusText(code)
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if strings.ContainsRune(msg, '\r') {
		return http.StatusBadRequest, http.StatusText(http.StatusBadRequest), false
	}
	return code, msg, true
}

// writeAnswer writes an error answer as pve-http-server does: PVE's
// message as the status line's reason phrase (net/http would write the
// standard phrase, so the answer goes out on the hijacked connection),
// its headers, the body, and the connection closed (AnyEvent.pm response:
// keep_alive is 0 for a code >= 400). A nil body sends no Content-Type
// and no Content-Length, as a 401 has. Where the connection cannot be
// taken over (HTTP/2, a recorder in a test) the standard phrase goes out.
// It returns the code sent.
func writeAnswer(w http.ResponseWriter, r *http.Request, code int, msg string, body []byte) int {
	code, reason, ok := statusLine(code, msg)
	if !ok {
		body = nil
	}
	hdr := http.Header{}
	if body != nil {
		hdr.Set("Content-Type", "application/json;charset=UTF-8")
		hdr.Set("Content-Length", strconv.Itoa(len(body)))
	}
	if r.Body != nil {
		// Read what the client sent, so closing does not reset the
		// connection before the client reads the answer.
		io.Copy(io.Discard, io.LimitReader(r.Body, maxBody))
	}
	if r.ProtoMajor == 1 {
		if conn, buf, err := http.NewResponseController(w).Hijack(); err == nil {
			defer conn.Close()
			date := time.Now().UTC().Format(http.TimeFormat)
			hdr.Set("Date", date)
			hdr.Set("Expires", date)
			hdr.Set("Cache-Control", "max-age=0")
			hdr.Set("Pragma", "no-cache")
			hdr.Set("Server", "pve-api-daemon/3.0")
			hdr.Set("Connection", "close")
			fmt.Fprintf(buf, "%s %d %s\r\n", r.Proto, code, reason)
			writeHeader(buf, hdr)
			buf.WriteString("\r\n")
			buf.Write(body)
			buf.Flush()
			return code
		}
	}
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.Header().Set("Connection", "close")
	w.WriteHeader(code)
	w.Write(body)
	return code
}

// writeHeader writes hdr's fields in a stable order.
func writeHeader(w io.Writer, hdr http.Header) {
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range hdr[k] {
			fmt.Fprintf(w, "%s: %s\r\n", k, v)
		}
	}
}

// bodyMessage is an error's message as PVE's JSON body carries it: the
// text a Perl die raised, which ends with a newline (pve-manager
// PVE/HTTPServer.pm rest_handler puts the exception's msg in "message";
// pve-http-server Formatter/Standard.pm prepare_response_data copies it).
func bodyMessage(msg string) string {
	if msg == "" || strings.HasSuffix(msg, "\n") {
		return msg
	}
	return msg + "\n"
}

// writeErr answers e as PVE's JSON formatter does (pve-http-server
// Formatter/Standard.pm prepare_response_data: data null, the message,
// and "errors" per parameter when there are any), with the message as
// the status line's reason phrase.
func writeErr(w http.ResponseWriter, r *http.Request, e *apiError) int {
	body := map[string]any{"data": nil, "message": bodyMessage(e.msg)}
	if len(e.errors) > 0 {
		body["errors"] = e.errors
	}
	b, err := json.Marshal(body)
	if err != nil {
		b = []byte(`{"data":null,"message":"internal error encoding response\n"}`)
	}
	return writeAnswer(w, r, e.status, e.msg, b)
}

func writeData(w http.ResponseWriter, data any) int {
	body := map[string]any{"data": data}
	if wt, ok := data.(withTop); ok {
		body["data"] = wt.data
		for k, v := range wt.top {
			body[k] = v
		}
	}
	writeJSON(w, http.StatusOK, body)
	return http.StatusOK
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"data":null,"message":"internal error encoding response"}`)
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
