package lake

import "path/filepath"

// osPath is where a warehouse-relative path of a local catalog lies on disk.
func (t *Table) osPath(p string) string { return filepath.Join(t.cat.fio.Root(), p) }
