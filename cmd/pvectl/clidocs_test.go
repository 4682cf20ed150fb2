package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/pvectl/pvectl/pkg/secret"
)

// The CLI reference in docs/cli is generated from the command tree (make
// generate runs this); TestCLIReference fails when it is stale.
//
//go:generate go test -run ^TestCLIReference$ . -args -update-docs

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli from the command tree")

const cliDocsDir = "../../docs/cli"

// docsRoot is the command tree as a user's pvectl has it, completion
// command included (cobra adds it when it runs).
func docsRoot() *cobra.Command {
	g := &globalOptions{streams: Streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard},
		scrubber: secret.NewScrubber(), signals: notifySignals}
	root := newRootCmd("dev", g)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultVersionFlag()
	return root
}

// documented lists the commands the reference has a page for.
func documented(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
			out = append(out, documented(sub)...)
		}
	}
	return out
}

// cliReference renders the markdown pages (docs/cli/*.md) and man pages
// (docs/cli/man/*.1), by file name relative to docs/cli.
func cliReference(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	// A man page's date would change every month: the pages leave it
	// empty (they change with the commands, which git dates).
	header := &doc.GenManHeader{Title: "PVECTL", Section: "1", Source: "pvectl", Manual: "pvectl manual", Date: &time.Time{}}
	for _, c := range documented(docsRoot()) {
		base := strings.ReplaceAll(c.CommandPath(), " ", "_")
		var md bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &md, func(s string) string { return s }); err != nil {
			t.Fatal(err)
		}
		files[base+".md"] = md.Bytes()
		var man bytes.Buffer
		h := *header
		if err := doc.GenMan(c, &h, &man); err != nil {
			t.Fatal(err)
		}
		files[filepath.Join("man", strings.ReplaceAll(c.CommandPath(), " ", "-")+".1")] = bytes.Replace(man.Bytes(), []byte(`"Jan 0001"`), []byte(`""`), 1)
	}
	return files
}

// TestCLIReference: docs/cli holds exactly the generated pages.
func TestCLIReference(t *testing.T) {
	want := cliReference(t)
	if *updateDocs {
		if err := os.RemoveAll(cliDocsDir); err != nil {
			t.Fatal(err)
		}
		for name, b := range want {
			p := filepath.Join(cliDocsDir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var have []string
	err := filepath.WalkDir(cliDocsDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(cliDocsDir, p)
		have = append(have, rel)
		got, _ := os.ReadFile(p)
		if w, ok := want[rel]; !ok {
			t.Errorf("docs/cli/%s documents no command: run `make generate`", rel)
		} else if !bytes.Equal(got, w) {
			t.Errorf("docs/cli/%s is stale: run `make generate`", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !slices.Contains(have, name) {
			t.Errorf("docs/cli/%s is missing: run `make generate`", name)
		}
	}
}

// TestCLIReferenceMatchesHelp: every command's page says what `pvectl …
// --help` prints: its description, its usage line and every flag line.
func TestCLIReferenceMatchesHelp(t *testing.T) {
	pages := cliReference(t)
	for _, c := range documented(docsRoot()) {
		path := c.CommandPath()
		t.Run(path, func(t *testing.T) {
			page, err := os.ReadFile(filepath.Join(cliDocsDir, strings.ReplaceAll(path, " ", "_")+".md"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(page, pages[strings.ReplaceAll(path, " ", "_")+".md"]) {
				t.Fatal("page is stale: run `make generate`")
			}
			var out bytes.Buffer
			args := append(strings.Fields(path)[1:], "--help")
			if code := Execute("dev", args, Streams{In: strings.NewReader(""), Out: &out, Err: &out}); code != 0 {
				t.Fatalf("--help: exit %d\n%s", code, out.String())
			}
			help := out.String()
			if !strings.Contains(help, "Usage:") {
				t.Fatalf("--help printed no usage:\n%s", help)
			}
			section := ""
			for _, line := range strings.Split(help, "\n") {
				line = strings.TrimRight(line, " ")
				if line == "" || strings.HasPrefix(line, "Use \"") {
					continue // the closing hint names the help command
				}
				if !strings.HasPrefix(line, " ") && strings.HasSuffix(line, ":") {
					section = line
					continue
				}
				if section == "Usage:" {
					// "  pvectl plan [flags]"; the page names no "[command]" form
					if line = strings.TrimSpace(line); strings.HasSuffix(line, "[command]") {
						continue
					}
				}
				if strings.HasPrefix(line, "  ") && isSubcommandLine(c, line) {
					continue // the page links subcommands instead of listing them
				}
				if !strings.Contains(string(page), line) {
					t.Errorf("the page lacks this line of --help:\n%q", line)
				}
			}
		})
	}
}

// isSubcommandLine recognises "  name    Short" lines of a help's command list.
func isSubcommandLine(c *cobra.Command, line string) bool {
	f := strings.Fields(line)
	for _, sub := range c.Commands() {
		if len(f) > 0 && f[0] == sub.Name() {
			return true
		}
	}
	return false
}

// TestCLIGuideNamesEveryFlag: the hand-written guide (docs/cli.md) names
// every flag a command has, in that command's synopsis line or its
// "## command" section; a global flag anywhere. (The generated reference
// lists them anyway; the guide is what says what they do.)
func TestCLIGuideNamesEveryFlag(t *testing.T) {
	raw, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	guide := string(raw)
	synopsis, sections := cliGuideParts(guide)
	root := docsRoot()
	for _, f := range usageFlags(root.PersistentFlags().FlagUsages()) {
		if !strings.Contains(guide, "--"+f.name) {
			t.Errorf("docs/cli.md does not name the global flag --%s", f.name)
		}
	}
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() || c.Name() == "completion" || c.Name() == "help" {
			continue
		}
		text := synopsis[c.Name()] + sections[c.Name()]
		if text == "" {
			t.Errorf("docs/cli.md has neither a synopsis line nor a section for %q", c.Name())
			continue
		}
		for _, f := range usageFlags(c.LocalNonPersistentFlags().FlagUsages()) {
			if strings.Contains(text, "--"+f.name) || f.short != "" && strings.Contains(text, "-"+f.short+" ") {
				continue
			}
			t.Errorf("docs/cli.md names no --%s of `pvectl %s` (neither its synopsis line nor its section)", f.name, c.Name())
		}
	}
}

// cliGuideParts splits docs/cli.md into each command's synopsis (the
// lines from "pvectl NAME" in the first code block to the next
// "pvectl …" line) and its "## NAME" section.
func cliGuideParts(guide string) (synopsis, sections map[string]string) {
	synopsis, sections = map[string]string{}, map[string]string{}
	blocks := 0
	cmd := ""
	for line := range strings.Lines(guide) {
		if strings.HasPrefix(line, "```") {
			blocks++
			cmd = ""
			continue
		}
		if blocks == 1 {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "pvectl" {
				cmd = f[1]
			}
			if cmd != "" {
				synopsis[cmd] += line
			}
			continue
		}
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cmd = strings.TrimSpace(h)
			continue
		}
		if blocks >= 2 && cmd != "" {
			sections[cmd] += line
		}
	}
	return synopsis, sections
}

type usageFlag struct{ name, short string }

var usageFlagLine = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)`)

// usageFlags are the flags of a FlagSet's usage text (hidden ones are not
// in it), --help left out.
func usageFlags(usage string) []usageFlag {
	var out []usageFlag
	for line := range strings.Lines(usage) {
		if m := usageFlagLine.FindStringSubmatch(line); m != nil && m[2] != "help" {
			out = append(out, usageFlag{name: m[2], short: m[1]})
		}
	}
	return out
}
