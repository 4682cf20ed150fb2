package pvesim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// apiError is an answer other than 200.
type apiError struct {
	status int
	msg    string
	errors map[string]string
}

func (e *apiError) Error() string { return e.msg }

// assertIfModified is pve-common Tools.pm assert_if_modified: a digest
// sent that is not the file's (or config's) refuses the write.
func assertIfModified(q *request, digest string) error {
	if d := q.get("digest"); d != "" && d != digest {
		return fail(http.StatusInternalServerError, "detected modified configuration - file changed by other user? Try again.")
	}
	return nil
}

func fail(status int, format string, args ...any) *apiError {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

func paramErr(errs map[string]string) *apiError {
	return &apiError{status: http.StatusBadRequest, msg: "Parameter verification failed.", errors: errs}
}

func paramErr1(param, format string, args ...any) *apiError {
	return paramErr(map[string]string{param: fmt.Sprintf(format, args...)})
}

// withTop lets a handler add top-level members beside "data" (total, changes).
type withTop struct {
	data any
	top  map[string]any
}

// request is one parsed API call.
type request struct {
	ctx    context.Context // the HTTP request's: a lock wait ends with it
	method string
	path   string // below /api2/json
	vars   map[string]string
	params url.Values
	user   string
	upload *upload // multipart file part, if any
	fromHA bool    // made by the HA stack (rpcenv type 'ha'), not the API
}

func (q *request) get(k string) string { return q.params.Get(k) }
func (q *request) has(k string) bool   { _, ok := q.params[k]; return ok }

func (q *request) bool(k string) bool {
	v := q.params.Get(k)
	return v == "1" || v == "true" || v == "yes" || v == "on"
}

func (q *request) int(k string, def int) int {
	if v, err := strconv.Atoi(q.params.Get(k)); err == nil {
		return v
	}
	return def
}
