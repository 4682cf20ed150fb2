package pve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseUPID(t *testing.T) {
	tests := []struct {
		name, in string
		want     UPID
		wantErr  bool
	}{
		{
			name: "qmcreate",
			in:   "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:",
			want: UPID{Node: "pve", PID: 0xA1B2C, PStart: 0x12D687, StartTime: 0x6745F0A1, Type: "qmcreate", ID: "100", User: "root@pam"},
		},
		{
			name: "token user and 9-digit pstart",
			in:   "UPID:node-2:0000ABCD:1A2B3C4D5:6745F0A1:qmclone:9000:deploy@pve!ci:",
			want: UPID{Node: "node-2", PID: 0xABCD, PStart: 0x1A2B3C4D5, StartTime: 0x6745F0A1, Type: "qmclone", ID: "9000", User: "deploy@pve!ci"},
		},
		{
			name: "empty id",
			in:   "UPID:pve:00001234:00005678:6745F0A1:srvreload::root@pam:",
			want: UPID{Node: "pve", PID: 0x1234, PStart: 0x5678, StartTime: 0x6745F0A1, Type: "srvreload", User: "root@pam"},
		},
		{
			name: "single letter node lower-case hex",
			in:   "UPID:p:0000abcd:0000abcd:6745f0a1:download:local:root@pam:",
			want: UPID{Node: "p", PID: 0xabcd, PStart: 0xabcd, StartTime: 0x6745f0a1, Type: "download", ID: "local", User: "root@pam"},
		},
		{name: "no trailing colon", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam", wantErr: true},
		{name: "empty", in: "", wantErr: true},
		{name: "wrong prefix", in: "upid:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:", wantErr: true},
		{name: "short pid", in: "UPID:pve:A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:", wantErr: true},
		{name: "pstart too long", in: "UPID:pve:000A1B2C:0012D6870A:6745F0A1:qmcreate:100:root@pam:", wantErr: true},
		{name: "non-hex starttime", in: "UPID:pve:000A1B2C:0012D687:6745F0AZ:qmcreate:100:root@pam:", wantErr: true},
		{name: "node ends with dash", in: "UPID:pve-:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:", wantErr: true},
		{name: "empty type", in: "UPID:pve:000A1B2C:0012D687:6745F0A1::100:root@pam:", wantErr: true},
		{name: "empty user", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100::", wantErr: true},
		{name: "slash in id", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:1/0:root@pam:", wantErr: true},
		{name: "space in type", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qm create:100:root@pam:", wantErr: true},
		{name: "extra field", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:x:", wantErr: true},
		{name: "trailing newline", in: "UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam:\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUPID(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %+v, want an error", got)
				}
				if !strings.Contains(err.Error(), "invalid task id") {
					t.Errorf("got error %q, want it to say invalid task id", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			tc.want.Raw = tc.in
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UPID (-want +got):\n%s", diff)
			}
			if got.String() != tc.in {
				t.Errorf("got String() %q, want %q", got.String(), tc.in)
			}
		})
	}
}

func TestShortenUPIDs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"task UPID:pve:000A1B2C:0012D687:6745F0A1:qmcreate:100:root@pam!ci: finished", "task qmcreate 100 on pve finished"},
		{"UPID:pve:00001234:00005678:6745F0A1:srvreload::root@pam: and UPID:n2:0000ABCD:1A2B3C4D5:6745F0A1:qmclone:9000:deploy@pve!ci:",
			"srvreload on pve and qmclone 9000 on n2"},
		{"no task here", "no task here"},
		{"UPID:broken:", "UPID:broken:"},
	}
	for _, tt := range tests {
		if got := ShortenUPIDs(tt.in); got != tt.want {
			t.Errorf("ShortenUPIDs(%q): got %q want %q", tt.in, got, tt.want)
		}
	}
}
