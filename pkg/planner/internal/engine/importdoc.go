package engine

import (
	"io"
	"slices"

	"github.com/pvectl/pvectl/pkg/planner/importdoc"
)

// ImportedDoc is one document of an import (package importdoc).
type ImportedDoc = importdoc.Doc

// Field is one spec key of an imported document.
type Field = importdoc.Field

// Encode writes the documents as one multi-document YAML stream, those
// that do not plan clean (Rejected) commented out at its end.
func (res *ImportResult) Encode(w io.Writer) error {
	return importdoc.Encode(w, append(slices.Clip(res.Docs), res.Rejected...))
}

// DocName makes a document name unique among the import's documents of
// kind: alt when name is taken.
func (ic *ImportCtx) DocName(kind, name, alt string) string {
	if ic.Docs[kind+"/"+name] == nil {
		return name
	}
	return alt
}
