package arrowutil

import "github.com/apache/arrow-go/v18/arrow"

// SameColumns reports whether a and b have the same column names and types
// (metadata and nullability aside).
func SameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.Fields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}
