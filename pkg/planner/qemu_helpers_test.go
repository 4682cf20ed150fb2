package planner

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pvectl/pvectl/pkg/provision/provisiontest"
	"github.com/pvectl/pvectl/pkg/pve"
	"github.com/pvectl/pvectl/pkg/pve/pvesim"
	"github.com/pvectl/pvectl/pkg/pve/pvesim/simtest"
	"github.com/pvectl/pvectl/pkg/spec"
)

// startTestDNS serves records on loopback and returns its address.
func startTestDNS(t *testing.T, records map[string]string) string {
	t.Helper()
	return provisiontest.StartDNS(t, records).Addr
}

// silentUDP is a loopback UDP address where nothing ever answers.
func silentUDP(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

// racer stands for another client that takes, just before pvectl's
// create or clone reaches PVE, the vmid it was given.
type racer struct {
	mu    sync.Mutex
	left  int
	count int
}

func (r *racer) raced() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

// newRacingSim puts a racer in front of a simulator for the first n
// creates and clones.
func newRacingSim(t *testing.T, n int) (*simClients, *racer) {
	t.Helper()
	s := simtest.Start(t, simtest.Options{Sim: pvesim.Options{TokenID: simToken, TokenSecret: simSecret, TaskDuration: time.Millisecond, Seed: 1}})
	rc := &racer{left: n}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && (req.URL.Path == "/api2/json/nodes/pve/qemu" || strings.HasSuffix(req.URL.Path, "/clone")) {
			if err := req.ParseForm(); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			id := req.PostForm.Get("vmid")
			if id == "" {
				id = req.PostForm.Get("newid")
			}
			rc.mu.Lock()
			race := rc.left > 0
			if race {
				rc.left--
				rc.count++
			}
			rc.mu.Unlock()
			if race {
				err := s.Client.CreateQemu(context.Background(), "pve", url.Values{"vmid": {id}, "name": {"racer-" + id}, "memory": {"128"}})
				if err != nil {
					t.Errorf("racer: %v", err)
				}
			}
			body := req.PostForm.Encode()
			req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), int64(len(body))
			req.Header.Set("Content-Length", fmt.Sprint(len(body)))
		}
		s.Server.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	cl, err := pve.NewClient(front.URL, pve.WithToken(s.TokenID, s.Secret), pve.WithTaskPolling(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return &simClients{cl: cl, conn: &spec.Connection{URL: front.URL, Nodes: []string{"pve"}}}, rc
}
