package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pvectl/pvectl/internal/lazyre"
	"github.com/pvectl/pvectl/pkg/pve/schema"
)

// problem is a kind's complaint about one spec key of a resource ("" for
// the document as a whole).
type problem struct{ key, msg string }

// collect adapts a check that reports through a callback to a kind row's
// Check.
func collect(check func(r *Resource, report func(key, format string, args ...any))) func(r *Resource) []problem {
	return func(r *Resource) []problem {
		var out []problem
		check(r, func(key, format string, args ...any) {
			out = append(out, problem{key, fmt.Sprintf(format, args...)})
		})
		return out
	}
}

// checks runs a kind's checks in order: a later one sees what an earlier
// one derived.
func checks(cs ...func(r *Resource) []problem) func(r *Resource) []problem {
	return func(r *Resource) []problem {
		var out []problem
		for _, c := range cs {
			out = append(out, c(r)...)
		}
		return out
	}
}

// downloadExt are the file names PVE's download-url accepts per content
// type (pve-storage src/PVE/Storage.pm ISO_EXT_RE_0, VZTMPL_EXT_RE_1 and,
// for import, SAFE_CHAR_CLASS_RE with UPLOAD_IMPORT_EXT_RE_1, as
// src/PVE/API2/Storage/Status.pm download_url applies them).
var downloadExt = map[string]*lazyre.Regexp{
	"iso":    lazyre.New(`(?i)^[^/]+\.(?:iso|img)$`),
	"vztmpl": lazyre.New(`(?i)^[^/]+\.(?:tar|tar\.(?:gz|xz|zst|bz2))$`),
	"import": lazyre.New(`^[a-zA-Z0-9\-.+=_]+\.(?:ova|qcow2|raw|vmdk)$`),
}

var downloadExtHint = map[string]string{
	"iso":    ".iso or .img",
	"vztmpl": ".tar, .tar.gz, .tar.xz, .tar.zst or .tar.bz2",
	"import": ".ova, .qcow2, .raw or .vmdk",
}

// compressions are what PVE decompresses a download with (pve-storage
// src/PVE/Storage/Plugin.pm KNOWN_COMPRESSION_FORMATS, Storage.pm
// decompressor_info).
var compressions = []string{"gz", "lzo", "zst", "bz2"}

// unsafeFileChars are what pve-storage's normalize_content_filename
// (src/PVE/Storage.pm) replaces by "_".
var unsafeFileChars = lazyre.New(`[^a-zA-Z0-9_.-]`)

// normalizedFilename is the name PVE stores a downloaded or uploaded file
// under: the part after the last slash, unsafe characters replaced.
func normalizedFilename(f string) string {
	f = strings.TrimSuffix(f, "\n")
	if i := strings.LastIndexAny(f, `/\`); i >= 0 {
		f = f[i+1:]
	}
	return unsafeFileChars.ReplaceAllString(f, "_")
}

// checkDownload is a downloaded file's Check: its volume must be one PVE
// can name (the file name as PVE stores it, an extension its content
// type takes), so that the next plan finds what the download made.
func checkDownload(r *Resource) []problem {
	var out []problem
	content, file := r.Params.Get("content"), r.Params.Get("filename")
	if file != "" {
		if n := normalizedFilename(file); n != file {
			out = append(out, problem{"filename", fmt.Sprintf("PVE would store file %q as %q (it keeps only letters, digits, _ . and -): write filename: %s", file, n, n)})
		} else if re := downloadExt[content]; re != nil && !re.MatchString(file) {
			out = append(out, problem{"filename", fmt.Sprintf("file %q: content %s takes a name ending in %s", file, content, downloadExtHint[content])})
		}
	}
	switch c := r.Params.Get("compression"); {
	case c == "":
	case !slices.Contains(compressions, c):
		// PVE's schema has no enum here (an undefined variable in
		// Status.pm); its task would fail "no decompression method found".
		out = append(out, problem{"compression", fmt.Sprintf("compression %q: want one of %s", c, strings.Join(compressions, ", "))})
	case content != "" && content != "iso":
		out = append(out, problem{"compression", fmt.Sprintf("compression %s: PVE decompresses only ISO images (content: iso), not %s", c, content)})
	}
	return out
}

// downloadVolid is the volume a downloaded file becomes, as other
// resources name it ("local:iso/debian.iso").
func downloadVolid(r *Resource) string {
	s, c, f := r.Params.Get("storage"), r.Params.Get("content"), r.Params.Get("filename")
	if s == "" || c == "" || f == "" {
		return ""
	}
	return s + ":" + c + "/" + f
}

// volumeIdentities: a file on a storage of a node (local storages hold a
// file per node; an unset node is the connection's default node).
func volumeIdentities(r *Resource) []identity {
	v := downloadVolid(r)
	if v == "" {
		return nil
	}
	node := "the default node"
	if n := r.Params.Get("node"); n != "" {
		node = "node " + n
	}
	return []identity{{ns: "volume", key: fmt.Sprintf("volume %s on %s", v, node), what: "filename"}}
}

// driveVolumes are the volumes a guest's drives name: the volume of every
// drive-like value ("local:iso/x.iso,media=cdrom") and its import-from
// source. Values that are no volume simply match nothing.
func driveVolumes(r *Resource) []refValue {
	var out []refValue
	for _, key := range r.Params.Keys() {
		v := r.Params.Get(key)
		items, err := schema.SplitPropertyString(v)
		if err != nil {
			continue
		}
		for _, it := range items {
			if (it.Key == "" || it.Key == "file" || it.Key == "import-from") && strings.Contains(it.Value, ":") {
				out = append(out, refValue{key, it.Value})
			}
		}
	}
	return out
}
