package main

import (
	"context"
	"os"
	"strings"
	"testing"
)

func TestApproval(t *testing.T) {
	tests := []struct {
		name                           string
		destroy, auto, json, stdinTerm bool
		wantErr                        string
	}{
		{name: "terminal stdin asks", stdinTerm: true},
		{name: "auto-approve", auto: true},
		{name: "auto-approve with json", auto: true, json: true},
		{name: "json cannot ask", stdinTerm: true, json: true, wantErr: "apply --json needs --auto-approve"},
		{name: "piped stdin", wantErr: "apply needs --auto-approve when its input is not a terminal (or save a plan"},
		{name: "destroy piped stdin", destroy: true, wantErr: "destroy needs --auto-approve when its input is not a terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verb := "apply"
			if tt.destroy {
				verb = "destroy"
			}
			err := approval(verb, tt.destroy, tt.auto, tt.json, tt.stdinTerm)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("got %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("got %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Issue 10 acceptance: with stdin on a terminal and stdout piped (as in
// `pvectl apply -f x | tee log`) apply asks, and applies on "yes"; an
// interrupt at the prompt ends it with exit 130 and one clean line.
func TestE2EPromptWhenStdinIsATerminal(t *testing.T) {
	env := startSim(t)
	f := writeSpec(t, "pool.yaml", "kind: Pool\nname: asked\n")
	typer, term := openPTY(t)
	run := env.start(term, "apply", "-f", f)
	run.waitFor("the question", func(out, _ string) bool { return strings.HasSuffix(out, "Enter a value: ") })
	if _, err := typer.WriteString("yes\n"); err != nil {
		t.Fatal(err)
	}
	r := run.wait()
	if r.code != 0 || !strings.Contains(r.stdout, "Apply complete: 1 created.") {
		t.Fatalf("exit %d, want 0 and the pool created\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	pools, err := env.client.Pools(context.Background())
	if err != nil || !hasPool(pools, "asked") {
		t.Errorf("pool not created: %v %v", pools, err)
	}

	f2 := writeSpec(t, "pool2.yaml", "kind: Pool\nname: interrupted\n")
	run = env.start(term, "apply", "-f", f2)
	run.waitFor("the question", func(out, _ string) bool { return strings.HasSuffix(out, "Enter a value: ") })
	run.signal(os.Interrupt)
	r = run.wait()
	if r.code != 130 || r.stderr != "Interrupted: nothing was changed.\n" {
		t.Errorf("interrupt at the prompt: exit %d stderr %q, want 130 and one clean line", r.code, r.stderr)
	}
	if pools, _ := env.client.Pools(context.Background()); hasPool(pools, "interrupted") {
		t.Error("the pool was created after an interrupt at the prompt")
	}
}

// A closed input at the prompt is a no, said plainly.
func TestPromptClosedInput(t *testing.T) {
	var out strings.Builder
	ok, err := confirm(context.Background(), strings.NewReader(""), &out, false)
	if ok || err == nil || strings.Contains(err.Error(), "EOF") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("got %v, %v; want a plain refusal without EOF", ok, err)
	}
}
