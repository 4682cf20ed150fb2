package spec

// Converting documents while they are read.
//
// A document's YAML tree is ten to twenty times the size of its text, and
// its resource is built from it only once every Defaults document is
// known, at the end. For a large input (many small documents), keeping
// every tree until then is most of Load's memory. So when the input is
// large and holds no Defaults document, each resource document is
// converted as soon as it is read, and its tree dropped.
//
// Whether a Defaults document comes is not known in advance (a later
// file, a ${VAR} kind): when one shows up after a resource was converted,
// Load starts over without streaming. The outcome is the same either way.

// streamMinSize is the input size from which documents are streamed:
// below it the trees are small, and waiting for the schema facts before
// reading (streaming needs them) would cost start-up time.
const streamMinSize = 1 << 20

// streamState is what streaming keeps while the files are read.
type streamState struct {
	// converted are the resources converted so far (a second document of
	// one Kind/name is left to build, which refuses it).
	converted map[Ref]bool
	// abandoned is set when a Defaults document came after a conversion.
	abandoned bool
}

// streams reports whether Load converts documents as they are read: for
// a large input of files (stdin cannot be read twice).
func (l *loader) streams(files []string) bool {
	for _, f := range files {
		if f == StdinPath {
			return false
		}
	}
	return l.inputSize >= streamMinSize
}

// streamDoc converts d at once when streaming and d is a resource that
// build would convert, with no Defaults to merge (none came so far; one
// that comes later abandons the stream).
func (l *loader) streamDoc(d *document) {
	st := l.stream
	if st == nil || st.abandoned || d.kind == "" || d.name == "" {
		return
	}
	k := kindOf(d.kind)
	switch {
	case k == nil:
		return
	case k.Role == roleDefaults:
		if len(st.converted) > 0 {
			st.abandoned = true
		}
		return
	case k.Role != roleResource || st.converted[d.ref()]:
		return
	}
	st.converted[d.ref()] = true
	d.res = l.resource(d, k, nil)
	d.spec = nil
}
